// The command line every file-format workload with its own options shares (--workload hdf5,
// --workload parquet): how many rows to write, the loaders' workers and batch size, the rounds
// and the seed, and --json. A component's workload adds its own options beside these.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace bench {

// The options as typed, checked by check_file_workload.
struct RawFileWorkload {
  std::string workload;
  std::string rows = "20000";
  std::string workers = "2";
  std::string batch_size = "64";
  std::string rounds = "3";
  std::string seed = "0";
  bool json = false;
};

struct FileWorkloadConfig {
  int64_t rows = 20000;
  int64_t workers = 2;
  int64_t batch_size = 64;
  int64_t rounds = 3;
  uint64_t seed = 0;
  bool json = false;
};

// Adds the shared options to `app`; `rows_help` says what --rows counts for this workload.
void add_file_workload_options(CLI::App& app, RawFileWorkload& raw, const std::string& name,
                               const std::string& rows_help);
// The checked values; a UsageError naming the option and the fix for a bad one, or for a
// --workload other than `name`.
FileWorkloadConfig check_file_workload(const RawFileWorkload& raw, const std::string& name);

}  // namespace bench
