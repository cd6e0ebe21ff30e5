// The command line of mploader-bench --workload hdf5 (h5_bench.h), checked with the bench's own
// parsers so that each error names the option and the fix.
#include "bench/cli.h"
#include "bench/workload_registry.h"
#include "components/hdf5/bench/h5_bench.h"

#include <CLI/CLI.hpp>

namespace bench {
namespace {

struct RawH5Bench {
  std::string workload = "hdf5";
  std::string rows = "20000";
  std::string workers = "2";
  std::string batch_size = "64";
  std::string rounds = "3";
  std::string seed = "0";
  std::string chunk_cache_mb = "32";
  bool json = false;
};

void add_options(CLI::App& app, RawH5Bench& r) {
  app.add_option("--workload", r.workload, "hdf5 (the other workloads have their own options; "
                 "see mploader-bench --help)")->capture_default_str();
  app.add_option("--rows", r.rows, "rows of each generated file")->capture_default_str();
  app.add_option("--workers", r.workers, "worker count of every loader")->capture_default_str();
  app.add_option("--batch-size", r.batch_size, "samples per batch")->capture_default_str();
  app.add_option("--rounds", r.rounds, "rounds of every loader; the report takes medians")
      ->capture_default_str();
  app.add_option("--seed", r.seed, "shuffling seed")->capture_default_str();
  app.add_option("--chunk-cache-mb", r.chunk_cache_mb, "mploader's chunk cache per field and "
                 "worker (H5DatasetOptions::chunk_cache_bytes); h5py's is 1 MiB")
      ->capture_default_str();
  app.add_flag("--json", r.json, "one JSON object per run, then the summary");
}

H5BenchConfig validate(const RawH5Bench& r) {
  if (r.workload != "hdf5") {
    throw UsageError("--workload: hdf5 runs on its own; run the other workloads separately");
  }
  H5BenchConfig c;
  c.rows = parse_count("--rows", r.rows, 64, "20000");
  c.workers = parse_count("--workers", r.workers, 0, "2");
  c.batch_size = parse_count("--batch-size", r.batch_size, 1, "64");
  c.rounds = parse_count("--rounds", r.rounds, 1, "3");
  c.seed = static_cast<uint64_t>(parse_count("--seed", r.seed, 0, "0"));
  c.chunk_cache_mb = parse_count("--chunk-cache-mb", r.chunk_cache_mb, 0, "32");
  c.json = r.json;
  if (c.batch_size > c.rows) {
    throw UsageError("--batch-size: " + r.batch_size + " is more than --rows " + r.rows +
                     "; give a smaller --batch-size");
  }
  return c;
}

bool wants_h5_bench(int argc, char** argv) { return wants_workload(argc, argv, "hdf5"); }

int h5_bench_main(int argc, char** argv) {
  CLI::App app("mploader-bench --workload hdf5: HDF5 files through H5Dataset against PyTorch's "
               "DataLoader over h5py", "mploader-bench");
  RawH5Bench raw;
  add_options(app, raw);
  if (!parse_workload_command_line(app, argc, argv, "mploader-bench --workload hdf5 --help")) {
    return 0;
  }
  return run_h5_bench(validate(raw));
}

[[maybe_unused]] const bool kHdf5Registered =
    register_workload({"hdf5", wants_h5_bench, h5_bench_main});

}  // namespace

}  // namespace bench
