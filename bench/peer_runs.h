// What the format workloads (hdf5, parquet) record of each loader's epoch, and what their
// reports take from the rounds: medians, and the check that every loader read the same values.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <map>
#include <string>
#include <vector>

namespace bench {

// One loader's shuffled epoch over one layout in one round.
struct PeerRun {
  std::string layout, loader;
  int64_t round = 0, samples = 0, checksum = 0;
  double samples_per_s = 0;
};

// Calls `run(layout, loader, round)` for every round, every layout (0 .. layouts - 1) and every
// loader, each round starting one loader later than the round before so that none always runs
// first; prints each run as a JSON line when `json`. The runs, in the order they ran.
template <typename Run>
std::vector<PeerRun> run_rounds(const char* workload, size_t layouts,
                                const std::vector<std::string>& loaders, int64_t rounds,
                                bool json, Run run) {
  std::vector<PeerRun> runs;
  for (int64_t round = 0; round < rounds; ++round) {
    for (size_t layout = 0; layout < layouts; ++layout) {
      for (size_t k = 0; k < loaders.size(); ++k) {
        const std::string& loader = loaders[(k + static_cast<size_t>(round)) % loaders.size()];
        runs.push_back(run(layout, loader, round));
        const PeerRun& r = runs.back();
        if (json) {
          std::cout << nlohmann::json{{"workload", workload}, {"layout", r.layout},
                                      {"loader", r.loader}, {"round", r.round},
                                      {"samples", r.samples}, {"checksum", r.checksum},
                                      {"samples_per_s", r.samples_per_s}}.dump() << '\n';
        }
      }
    }
  }
  return runs;
}

// The median samples/s of `loader` on `layout` over the rounds; 0 when it never ran.
inline double median_rate(const std::vector<PeerRun>& runs, const std::string& layout,
                          const std::string& loader) {
  std::vector<double> rates;
  for (const PeerRun& r : runs) {
    if (r.layout == layout && r.loader == loader) rates.push_back(r.samples_per_s);
  }
  std::sort(rates.begin(), rates.end());
  return rates.empty() ? 0 : rates[rates.size() / 2];
}

// Every loader of a layout must have read the same values: the checksums agree. Each run that
// disagrees with the layout's first is named on stderr.
inline bool checksums_agree(const std::vector<PeerRun>& runs, const std::string& workload) {
  std::map<std::string, int64_t> first;
  bool agree = true;
  for (const PeerRun& r : runs) {
    const auto [it, fresh] = first.emplace(r.layout, r.checksum);
    if (!fresh && it->second != r.checksum) {
      std::cerr << "mploader-bench: " << workload << " " << r.layout << ": " << r.loader
                << " round " << r.round << " read checksum " << r.checksum << ", not "
                << it->second << " as the first run did: the loaders did not read the same "
                << "values\n";
      agree = false;
    }
  }
  return agree;
}

}  // namespace bench
