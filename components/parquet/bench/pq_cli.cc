// The command line of mploader-bench --workload parquet (pq_bench.h), checked with the bench's own
// parsers so that each error names the option and the fix.
#include "bench/cli.h"
#include "bench/workload_registry.h"
#include "components/parquet/bench/pq_bench.h"

#include <CLI/CLI.hpp>

namespace bench {
namespace {

bool wants_pq_bench(int argc, char** argv) { return wants_workload(argc, argv, "parquet"); }

int pq_bench_main(int argc, char** argv) {
  CLI::App app("mploader-bench --workload parquet: Parquet files through ParquetShards against "
               "PyTorch over pyarrow and Hugging Face datasets", "mploader-bench");
  RawFileWorkload raw;
  add_file_workload_options(app, raw, "parquet", "rows of each layout (4 files)");
  if (!parse_workload_command_line(app, argc, argv, "mploader-bench --workload parquet --help")) {
    return 0;
  }
  return run_pq_bench(check_file_workload(raw, "parquet"));
}

[[maybe_unused]] const bool kParquetRegistered =
    register_workload({"parquet", wants_pq_bench, pq_bench_main});

}  // namespace

}  // namespace bench
