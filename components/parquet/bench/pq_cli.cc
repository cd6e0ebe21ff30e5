// The command line of mploader-bench --workload parquet (pq_bench.h), checked with the bench's own
// parsers so that each error names the option and the fix.
#include "bench/cli.h"
#include "bench/workload_registry.h"
#include "components/parquet/bench/pq_bench.h"

#include <CLI/CLI.hpp>

namespace bench {
namespace {

struct RawPqBench {
  std::string workload = "parquet";
  std::string rows = "20000";
  std::string workers = "2";
  std::string batch_size = "64";
  std::string rounds = "3";
  std::string seed = "0";
  bool json = false;
};

void add_options(CLI::App& app, RawPqBench& r) {
  app.add_option("--workload", r.workload, "parquet (the other workloads have their own options; "
                 "see mploader-bench --help)")->capture_default_str();
  app.add_option("--rows", r.rows, "rows of each layout (4 files)")->capture_default_str();
  app.add_option("--workers", r.workers, "worker count of every loader")->capture_default_str();
  app.add_option("--batch-size", r.batch_size, "samples per batch")->capture_default_str();
  app.add_option("--rounds", r.rounds, "rounds of every loader; the report takes medians")
      ->capture_default_str();
  app.add_option("--seed", r.seed, "shuffling seed")->capture_default_str();
  app.add_flag("--json", r.json, "one JSON object per run, then the summary");
}

PqBenchConfig validate(const RawPqBench& r) {
  if (r.workload != "parquet") {
    throw UsageError("--workload: parquet runs on its own; run the other workloads separately");
  }
  PqBenchConfig c;
  c.rows = parse_count("--rows", r.rows, 64, "20000");
  c.workers = parse_count("--workers", r.workers, 0, "2");
  c.batch_size = parse_count("--batch-size", r.batch_size, 1, "64");
  c.rounds = parse_count("--rounds", r.rounds, 1, "3");
  c.seed = static_cast<uint64_t>(parse_count("--seed", r.seed, 0, "0"));
  c.json = r.json;
  if (c.batch_size > c.rows) {
    throw UsageError("--batch-size: " + r.batch_size + " is more than --rows " + r.rows +
                     "; give a smaller --batch-size");
  }
  return c;
}

bool wants_pq_bench(int argc, char** argv) { return wants_workload(argc, argv, "parquet"); }

int pq_bench_main(int argc, char** argv) {
  CLI::App app("mploader-bench --workload parquet: Parquet files through ParquetShards against "
               "PyTorch over pyarrow and Hugging Face datasets", "mploader-bench");
  RawPqBench raw;
  add_options(app, raw);
  if (!parse_workload_command_line(app, argc, argv, "mploader-bench --workload parquet --help")) {
    return 0;
  }
  return run_pq_bench(validate(raw));
}

[[maybe_unused]] const bool kParquetRegistered =
    register_workload({"parquet", wants_pq_bench, pq_bench_main});

}  // namespace

}  // namespace bench
