// mploader-bench --workload hdf5 (h5_bench.h): the files, each loader's epoch, and the report.
#include "bench/peer_runs.h"
#include "bench/runners/python_child.h"
#include "bench/workloads/jpeg_dataset.h"
#include "components/hdf5/bench/h5_bench.h"

#include <mploader/hdf5/h5_dataset.h>
#include <mploader/loader.h>

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

struct Layout {
  std::string name;
  std::string file;    // in the data folder
  std::string fields;  // comma-separated, as h5_peers.py takes them
  std::vector<mploader::hdf5::H5Field> h5_fields;
};

const std::vector<Layout>& layouts() {
  static const std::vector<Layout> all = {
      {"images", "images.h5", "images,labels", {{"images", "/images"}, {"labels", "/labels"}}},
      {"images-gzip", "images_gzip.h5", "images,labels",
       {{"images", "/images"}, {"labels", "/labels"}}},
      {"text", "text.h5", "text,labels", {{"text", "/text"}, {"labels", "/labels"}}}};
  return all;
}
const std::vector<std::string> kLoaders{"mploader", "pytorch", "pytorch-batched"};

// The folder of the files for `rows`, written by h5py when missing.
std::string ensure_files(const H5BenchConfig& c) {
  const std::string dir = bench_cache_dir() + "/hdf5-" + std::to_string(c.rows);
  bool complete = true;
  for (const Layout& l : layouts()) complete = complete && fs::exists(dir + "/" + l.file);
  if (complete) return dir;
  if (!c.json) std::cerr << "mploader-bench: writing the HDF5 files in " << dir << " (h5py)\n";
  const int status = run_child({python(), script_path("h5_peers.py"), "write", dir,
                                std::to_string(c.rows)}, nullptr);
  if (status != 0) {
    throw std::runtime_error("hdf5: " + python() + " could not write the files (exit status " +
                             std::to_string(status) + "). Fix: " + python_fix() + " (h5py)");
  }
  return dir;
}

PeerRun run_mploader(const Layout& l, const std::string& dir, const H5BenchConfig& c,
                       int64_t round) {
  mploader::hdf5::H5DatasetOptions h5;
  h5.chunk_cache_bytes = c.chunk_cache_mb << 20;
  auto data = std::make_shared<mploader::hdf5::H5Dataset>(dir + "/" + l.file, l.h5_fields, h5);
  mploader::LoaderOptions o;
  o.batch_size = c.batch_size;
  o.num_workers = c.workers;
  o.shuffle = true;
  o.seed = c.seed;
  PeerRun r{l.name, "mploader", round};
  const Clock::time_point start = Clock::now();
  mploader::Loader loader(data, o);
  loader.set_epoch(static_cast<uint64_t>(round));
  for (const mploader::Batch& batch : loader) {
    r.samples += static_cast<int64_t>(batch.size());
    for (const auto& f : l.h5_fields) {
      if (batch.tensors().contains(f.name)) {
        r.checksum += batch[f.name].to(at::kLong).sum().item<int64_t>();
      } else {
        const mploader::TextColumn& text = batch.text(f.name);
        for (size_t i = 0; i < text.size(); ++i) r.checksum += static_cast<int64_t>(text[i].size());
      }
    }
  }
  r.samples_per_s = r.samples / std::chrono::duration<double>(Clock::now() - start).count();
  return r;
}

PeerRun run_pytorch(const Layout& l, const std::string& dir, const H5BenchConfig& c,
                      int64_t round, bool batched) {
  std::vector<std::string> args = {python(), script_path("h5_peers.py"), "run", dir + "/" + l.file,
                                   l.fields, std::to_string(c.workers),
                                   std::to_string(c.batch_size), std::to_string(c.seed + round)};
  if (batched) args.push_back("--batched");
  std::string out;
  const int status = run_child(args, &out);
  const nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
  if (status != 0 || !j.is_object()) {
    throw std::runtime_error("hdf5: the PyTorch peer failed (exit status " +
                             std::to_string(status) + "). Fix: " + python_fix());
  }
  PeerRun r{l.name, batched ? "pytorch-batched" : "pytorch", round};
  r.samples = j.at("samples").get<int64_t>();
  r.checksum = j.at("checksum").get<int64_t>();
  r.samples_per_s = r.samples / j.at("seconds").get<double>();
  return r;
}

void print_report(const H5BenchConfig& c, const std::vector<PeerRun>& results) {
  nlohmann::json summary{{"workload", "hdf5"}, {"summary", true}, {"rows", c.rows},
                         {"workers", c.workers}, {"batch_size", c.batch_size},
                         {"rounds", c.rounds}, {"chunk_cache_mb", c.chunk_cache_mb}};
  if (!c.json) {
    std::printf("hdf5: %lld rows a file, %lld workers, batch %lld, chunk cache %lld MiB, %lld "
                "round(s); samples/s (median), mploader's ratio to each peer\n",
                static_cast<long long>(c.rows), static_cast<long long>(c.workers),
                static_cast<long long>(c.batch_size), static_cast<long long>(c.chunk_cache_mb),
                static_cast<long long>(c.rounds));
    std::printf("%-12s %12s %12s %16s %10s %10s\n", "layout", "mploader", "pytorch",
                "pytorch-batched", "x pytorch", "x batched");
  }
  for (const Layout& l : layouts()) {
    const double m = median_rate(results, l.name, "mploader");
    const double p = median_rate(results, l.name, "pytorch");
    const double b = median_rate(results, l.name, "pytorch-batched");
    summary["samples_per_s"][l.name] = {{"mploader", m}, {"pytorch", p}, {"pytorch-batched", b}};
    summary["ratio"][l.name] = {{"pytorch", p > 0 ? m / p : 0},
                                {"pytorch-batched", b > 0 ? m / b : 0}};
    if (!c.json) {
      std::printf("%-12s %12.0f %12.0f %16.0f %10.2f %10.2f\n", l.name.c_str(), m, p, b,
                  p > 0 ? m / p : 0, b > 0 ? m / b : 0);
    }
  }
  if (c.json) std::cout << summary.dump() << '\n';
}

}  // namespace

int run_h5_bench(const H5BenchConfig& c) {
  std::vector<PeerRun> results;
  try {
    const std::string dir = ensure_files(c);
    results = run_rounds("hdf5", layouts().size(), kLoaders, c.rounds, c.json,
                         [&](size_t l, const std::string& loader, int64_t round) {
                           return loader == "mploader"
                                      ? run_mploader(layouts()[l], dir, c, round)
                                      : run_pytorch(layouts()[l], dir, c, round,
                                                    loader == "pytorch-batched");
                         });
  } catch (const std::exception& e) {
    std::cerr << "mploader-bench: " << e.what() << '\n';
    return 1;
  }
  if (!checksums_agree(results, "hdf5")) return 1;
  print_report(c, results);
  return 0;
}

}  // namespace bench
