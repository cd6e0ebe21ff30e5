// mploader-bench --workload parquet (pq_bench.h): the files, each loader's epoch, the report.
#include "bench/peer_runs.h"
#include "bench/runners/python_child.h"
#include "bench/workloads/jpeg_dataset.h"
#include "components/parquet/bench/pq_bench.h"

#include <mploader/loader.h>
#include <mploader/parquet/parquet_shards.h>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <stdexcept>

namespace bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

const std::vector<std::string> kLayouts{"numeric", "text"};
const std::vector<std::string> kParquetLoaders{"mploader", "pyarrow", "hf"};
constexpr int kFiles = 4;  // parquet_peers.py writes each layout as 4 files

std::vector<std::string> layout_files(const std::string& dir, const std::string& layout) {
  std::vector<std::string> files;
  for (int k = 0; k < kFiles; ++k) {
    char name[64];
    std::snprintf(name, sizeof name, "/%s-%03d.parquet", layout.c_str(), k);
    files.push_back(dir + name);
  }
  return files;
}

// The folder of the files for `rows`, written by pyarrow when missing.
std::string ensure_files(const PqBenchConfig& c) {
  const std::string dir = bench_cache_dir() + "/parquet-" + std::to_string(c.rows);
  bool complete = true;
  for (const std::string& l : kLayouts) {
    for (const std::string& f : layout_files(dir, l)) complete = complete && fs::exists(f);
  }
  if (complete) return dir;
  if (!c.json) {
    std::cerr << "mploader-bench: writing the Parquet files in " << dir << " (pyarrow)\n";
  }
  const int status = run_child({python(), script_path("parquet_peers.py"), "write", dir,
                                std::to_string(c.rows)}, nullptr);
  if (status != 0) {
    throw std::runtime_error("parquet: " + python() + " could not write the files (exit status " +
                             std::to_string(status) + "). Fix: " + python_fix() + " (pyarrow)");
  }
  return dir;
}

int64_t batch_checksum(const mploader::Batch& batch) {
  int64_t sum = batch["label"].sum().item<int64_t>();
  if (const at::Tensor* f = batch.tensors().find("features")) {
    sum += (*f * 4).round().to(at::kLong).sum().item<int64_t>();
  } else {
    const mploader::TextColumn& text = batch.text("text");
    for (size_t i = 0; i < text.size(); ++i) sum += static_cast<int64_t>(text[i].size());
  }
  return sum;
}

PeerRun run_mploader(const std::string& layout, const std::string& dir,
                       const PqBenchConfig& c, int64_t round) {
  auto data = std::make_shared<mploader::parquet::ParquetShards>(layout_files(dir, layout));
  mploader::LoaderOptions o;
  o.batch_size = c.batch_size;
  o.num_workers = c.workers;
  o.shuffle = true;
  o.shuffle_buffer = 1024;  // as the pyarrow peer's
  o.seed = c.seed;
  PeerRun r{layout, "mploader", round};
  const Clock::time_point start = Clock::now();
  mploader::Loader loader(data, o);
  loader.set_epoch(static_cast<uint64_t>(round));
  for (const mploader::Batch& batch : loader) {
    r.samples += static_cast<int64_t>(batch.size());
    r.checksum += batch_checksum(batch);
  }
  r.samples_per_s = r.samples / std::chrono::duration<double>(Clock::now() - start).count();
  return r;
}

PeerRun run_peer(const std::string& peer, const std::string& layout, const std::string& dir,
                   const PqBenchConfig& c, int64_t round) {
  std::string out;
  const int status = run_child({python(), script_path("parquet_peers.py"), "run", peer, dir,
                                layout, std::to_string(c.workers), std::to_string(c.batch_size),
                                std::to_string(c.seed + static_cast<uint64_t>(round))},
                               &out);
  const nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
  if (status != 0 || !j.is_object()) {
    throw std::runtime_error("parquet: the " + peer + " peer failed (exit status " +
                             std::to_string(status) + "). Fix: " + python_fix() +
                             " (pyarrow, datasets)");
  }
  PeerRun r{layout, peer, round};
  r.samples = j.at("samples").get<int64_t>();
  r.checksum = j.at("checksum").get<int64_t>();
  r.samples_per_s = r.samples / j.at("seconds").get<double>();
  return r;
}

void print_report(const PqBenchConfig& c, const std::vector<PeerRun>& results) {
  nlohmann::json summary{{"workload", "parquet"}, {"summary", true}, {"rows", c.rows},
                         {"workers", c.workers}, {"batch_size", c.batch_size},
                         {"rounds", c.rounds}};
  if (!c.json) {
    std::printf("parquet: %lld rows a layout, %lld workers, batch %lld, %lld round(s); "
                "samples/s (median), mploader's ratio to each peer\n",
                static_cast<long long>(c.rows), static_cast<long long>(c.workers),
                static_cast<long long>(c.batch_size), static_cast<long long>(c.rounds));
    std::printf("%-10s %12s %12s %12s %11s %8s\n", "layout", "mploader", "pyarrow", "hf",
                "x pyarrow", "x hf");
  }
  for (const std::string& l : kLayouts) {
    const double m = median_rate(results, l, "mploader");
    const double p = median_rate(results, l, "pyarrow");
    const double h = median_rate(results, l, "hf");
    summary["samples_per_s"][l] = {{"mploader", m}, {"pyarrow", p}, {"hf", h}};
    summary["ratio"][l] = {{"pyarrow", p > 0 ? m / p : 0}, {"hf", h > 0 ? m / h : 0}};
    if (!c.json) {
      std::printf("%-10s %12.0f %12.0f %12.0f %11.2f %8.2f\n", l.c_str(), m, p, h,
                  p > 0 ? m / p : 0, h > 0 ? m / h : 0);
    }
  }
  if (c.json) std::cout << summary.dump() << '\n';
}

}  // namespace

int run_pq_bench(const PqBenchConfig& c) {
  std::vector<PeerRun> results;
  try {
    const std::string dir = ensure_files(c);
    results = run_rounds("parquet", kLayouts.size(), kParquetLoaders, c.rounds, c.json,
                         [&](size_t l, const std::string& loader, int64_t round) {
                           return loader == "mploader"
                                      ? run_mploader(kLayouts[l], dir, c, round)
                                      : run_peer(loader, kLayouts[l], dir, c, round);
                         });
  } catch (const std::exception& e) {
    std::cerr << "mploader-bench: " << e.what() << '\n';
    return 1;
  }
  if (!checksums_agree(results, "parquet")) return 1;
  print_report(c, results);
  return 0;
}

}  // namespace bench
