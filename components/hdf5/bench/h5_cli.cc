// The command line of mploader-bench --workload hdf5 (h5_bench.h), checked with the bench's own
// parsers so that each error names the option and the fix.
#include "bench/cli.h"
#include "bench/workload_registry.h"
#include "components/hdf5/bench/h5_bench.h"

#include <CLI/CLI.hpp>

namespace bench {
namespace {

struct RawH5Bench {
  RawFileWorkload common;
  std::string chunk_cache_mb = "32";
};

void add_options(CLI::App& app, RawH5Bench& r) {
  add_file_workload_options(app, r.common, "hdf5", "rows of each generated file");
  app.add_option("--chunk-cache-mb", r.chunk_cache_mb, "mploader's chunk cache per field and "
                 "worker (H5DatasetOptions::chunk_cache_bytes); h5py's is 1 MiB")
      ->capture_default_str();
}

H5BenchConfig validate(const RawH5Bench& r) {
  H5BenchConfig c;
  static_cast<FileWorkloadConfig&>(c) = check_file_workload(r.common, "hdf5");
  c.chunk_cache_mb = parse_count("--chunk-cache-mb", r.chunk_cache_mb, 0, "32");
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
