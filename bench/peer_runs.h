// What the format workloads (hdf5, parquet) record of each loader's epoch, and what their
// reports take from the rounds: medians, and the check that every loader read the same values.
#pragma once

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
