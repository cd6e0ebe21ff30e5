// mploader-bench --workload tar-mix (mix_bench.h): the three ways of reading a mixture of tar
// corpora, round after round, and the report.
#include "bench/mix/mix_bench.h"
#include "bench/workloads/jpeg_dataset.h"
#include "bench/workloads/tar_workload.h"

#include <mploader/compose.h>
#include <mploader/loader.h>
#include <mploader/mixture.h>
#include <mploader/shards/tar_shards.h>
#include <mploader/stream_mixture.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <stdexcept>

namespace bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using Files = std::vector<std::string>;

const std::vector<double> kWeights{0.5, 0.3, 0.2};
const std::vector<std::string> kWays{"one", "stream", "index"};

// The packed shards in name order, split 4 / 2 / 2 into the three corpora.
std::vector<Files> mix_corpus_files(const std::string& tar_dir) {
  Files tars;
  for (const fs::directory_entry& e : fs::directory_iterator(tar_dir)) {
    if (e.path().extension() == ".tar") tars.push_back(e.path().string());
  }
  std::sort(tars.begin(), tars.end());
  if (tars.size() != static_cast<size_t>(kTarShardCount)) {
    throw std::runtime_error("tar-mix: " + tar_dir + " holds " + std::to_string(tars.size()) +
                             " tars, not the " + std::to_string(kTarShardCount) + " packed "
                             "there; delete the folder so that the next run packs it again");
  }
  return {Files(tars.begin(), tars.begin() + 4), Files(tars.begin() + 4, tars.begin() + 6),
          Files(tars.begin() + 6, tars.end())};
}

std::shared_ptr<mploader::shards::TarShards> tar_corpus(const Files& files) {
  return std::make_shared<mploader::shards::TarShards>(files, tar_workload_options());
}

// One way's dataset and options; `source_of` names a mixed sample's corpus.
struct Way {
  std::shared_ptr<mploader::Dataset> data;
  mploader::LoaderOptions options;
  std::function<size_t(int64_t)> source_of;
};

Way make_way(const std::string& way, const std::vector<Files>& corpora,
             const TarMixConfig& c) {
  Way w;
  w.options.batch_size = c.batch_size;
  w.options.num_workers = c.workers;
  w.options.shuffle = true;
  w.options.shuffle_buffer = c.shuffle_buffer;
  w.options.seed = c.seed;
  w.options.timeout = std::chrono::milliseconds(c.timeout_ms);
  if (way == "one") {
    Files all;
    for (const Files& f : corpora) all.insert(all.end(), f.begin(), f.end());
    w.data = tar_corpus(all);
    return w;
  }
  std::vector<std::shared_ptr<mploader::shards::TarShards>> sources;
  for (const Files& f : corpora) sources.push_back(tar_corpus(f));
  int64_t total = 0;
  for (const auto& s : sources) total += static_cast<int64_t>(s->size());
  if (way == "stream") {
    mploader::StreamMixtureOptions mix;
    mix.weights = kWeights;
    mix.num_samples = total;  // kCycle: as many draws as one corpus of all the shards
    auto data = std::make_shared<mploader::StreamMixture>(
        std::vector<std::shared_ptr<mploader::StreamingDataset>>(sources.begin(), sources.end()),
        mix);
    w.source_of = [data](int64_t i) { return data->source_of(i); };
    w.data = data;
    return w;
  }
  mploader::MixtureOptions mix;
  mix.weights = kWeights;
  mix.num_samples = total;
  mix.seed = c.seed;
  std::vector<size_t> sizes;
  for (const auto& s : sources) sizes.push_back(s->size());
  auto data = std::make_shared<mploader::ConcatDataset>(
      std::vector<std::shared_ptr<mploader::Dataset>>(sources.begin(), sources.end()));
  w.source_of = [data](int64_t i) { return data->locate(i).source; };
  w.data = data;
  w.options.shuffle = false;  // the sampler's draws are the order
  w.options.shuffle_buffer = 0;
  w.options.sampler = std::make_shared<mploader::MixtureSampler>(sizes, mix);
  return w;
}

struct WayResult {
  std::string way;
  int64_t round = 0;
  int64_t samples = 0;
  double samples_per_s = 0;  // after the first batch, as the other workloads' rates
  std::vector<int64_t> per_source;
};

// One epoch (epoch = round, so that the rounds draw differently) of one way.
WayResult run_way(const std::string& way, const std::vector<Files>& corpora,
                  const TarMixConfig& c, int64_t round) {
  Way w = make_way(way, corpora, c);
  WayResult r{way, round, 0, 0, std::vector<int64_t>(kWeights.size())};
  mploader::Loader loader(w.data, w.options);
  loader.set_epoch(static_cast<uint64_t>(round));
  Clock::time_point first{};
  int64_t after_first = 0;
  for (const mploader::Batch& batch : loader) {
    const int64_t n = static_cast<int64_t>(batch.indices().size());
    if (r.samples == 0) first = Clock::now();
    else after_first += n;
    r.samples += n;
    if (w.source_of) {
      for (int64_t i : batch.indices()) ++r.per_source[w.source_of(i)];
    }
  }
  const double s = std::chrono::duration<double>(Clock::now() - first).count();
  r.samples_per_s = s > 0 ? static_cast<double>(after_first) / s : 0;
  return r;
}

double median_rate(const std::vector<WayResult>& results, const std::string& way) {
  std::vector<double> rates;
  for (const WayResult& r : results) {
    if (r.way == way) rates.push_back(r.samples_per_s);
  }
  std::sort(rates.begin(), rates.end());
  return rates.empty() ? 0 : rates[rates.size() / 2];
}

// Each corpus's share of a mixed way over all rounds, and its distance from the weight in
// standard deviations of a binomial draw of that many samples.
std::string shares_line(const std::vector<WayResult>& results, const std::string& way) {
  std::vector<double> count(kWeights.size());
  double n = 0;
  for (const WayResult& r : results) {
    if (r.way != way) continue;
    for (size_t k = 0; k < count.size(); ++k) count[k] += static_cast<double>(r.per_source[k]);
    n += static_cast<double>(r.samples);
  }
  std::string line = way + " shares over " + std::to_string(static_cast<int64_t>(n)) +
                     " samples:";
  for (size_t k = 0; k < count.size(); ++k) {
    const double p = kWeights[k];
    const double sd = std::sqrt(n * p * (1 - p));
    char text[96];
    std::snprintf(text, sizeof text, " corpus %zu %.4f (weight %.1f, %+.1f sd)", k,
                  n > 0 ? count[k] / n : 0, p, sd > 0 ? (count[k] - n * p) / sd : 0);
    line += text;
  }
  return line;
}

void print_report(const TarMixConfig& c, int64_t images, const std::vector<WayResult>& results) {
  const double one = median_rate(results, "one");
  if (c.json) {
    nlohmann::json summary{{"workload", "tar-mix"}, {"summary", true}, {"workers", c.workers},
                           {"batch_size", c.batch_size}, {"rounds", c.rounds}};
    for (const std::string& way : kWays) {
      summary["median_samples_per_s"][way] = median_rate(results, way);
      summary["ratio_to_one"][way] = one > 0 ? median_rate(results, way) / one : 0;
    }
    std::cout << summary.dump() << '\n';
    return;
  }
  std::printf("tar-mix: %lld images in 8 tars as 3 corpora (4/2/2 shards), weights 0.5/0.3/0.2; "
              "%lld workers, batch %lld, %lld round(s)\n",
              static_cast<long long>(images), static_cast<long long>(c.workers),
              static_cast<long long>(c.batch_size), static_cast<long long>(c.rounds));
  std::printf("%-8s %14s %8s   per round\n", "way", "samples/s", "vs one");
  for (const std::string& way : kWays) {
    const double rate = median_rate(results, way);
    std::printf("%-8s %14.1f %8.3f  ", way.c_str(), rate, one > 0 ? rate / one : 0);
    for (const WayResult& r : results) {
      if (r.way == way) std::printf(" %.1f", r.samples_per_s);
    }
    std::printf("\n");
  }
  for (const char* way : {"stream", "index"}) {
    std::printf("%s\n", shares_line(results, way).c_str());
  }
}

}  // namespace

int run_tar_mix(const TarMixConfig& c) {
  const std::string jpeg_dir = default_jpeg_dir(c.jpeg_count);
  const std::string tar_dir = default_tar_dir(c.jpeg_count);
  if (!c.json) std::cerr << "mploader-bench: tar shards in " << tar_dir << '\n';
  ensure_jpeg_set(jpeg_dir, c.data_dir, c.jpeg_count);
  ensure_tar_shards(tar_dir, jpeg_dir);
  const std::vector<Files> corpora = mix_corpus_files(tar_dir);
  std::vector<WayResult> results;
  for (int64_t round = 0; round < c.rounds; ++round) {
    // Each round starts with the next way, so that no way always runs first or last.
    for (size_t w = 0; w < kWays.size(); ++w) {
      const std::string& way = kWays[(w + static_cast<size_t>(round)) % kWays.size()];
      try {
        results.push_back(run_way(way, corpora, c, round));
      } catch (const std::exception& e) {
        std::cerr << "mploader-bench: tar-mix " << way << " round " << round << " failed: "
                  << e.what() << '\n';
        return 1;
      }
      const WayResult& r = results.back();
      if (c.json) {
        std::cout << nlohmann::json{{"workload", "tar-mix"}, {"way", r.way}, {"round", r.round},
                                    {"samples", r.samples}, {"samples_per_s", r.samples_per_s},
                                    {"per_source", r.per_source}}
                         .dump()
                  << '\n';
      }
    }
  }
  print_report(c, c.jpeg_count, results);
  return 0;
}

}  // namespace bench
