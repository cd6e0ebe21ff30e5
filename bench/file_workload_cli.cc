// The shared command line of the file-format workloads (file_workload_cli.h).
#include "bench/file_workload_cli.h"

#include "bench/cli.h"

namespace bench {

void add_file_workload_options(CLI::App& app, RawFileWorkload& r, const std::string& name,
                               const std::string& rows_help) {
  r.workload = name;
  app.add_option("--workload", r.workload, name + " (the other workloads have their own "
                 "options; see mploader-bench --help)")->capture_default_str();
  app.add_option("--rows", r.rows, rows_help)->capture_default_str();
  app.add_option("--workers", r.workers, "worker count of every loader")->capture_default_str();
  app.add_option("--batch-size", r.batch_size, "samples per batch")->capture_default_str();
  app.add_option("--rounds", r.rounds, "rounds of every loader; the report takes medians")
      ->capture_default_str();
  app.add_option("--seed", r.seed, "shuffling seed")->capture_default_str();
  app.add_flag("--json", r.json, "one JSON object per run, then the summary");
}

FileWorkloadConfig check_file_workload(const RawFileWorkload& r, const std::string& name) {
  if (r.workload != name) {
    throw UsageError("--workload: " + name + " runs on its own; run the other workloads "
                     "separately");
  }
  FileWorkloadConfig c;
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

}  // namespace bench
