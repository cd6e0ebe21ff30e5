// Command line of mploader-bench: parsing (CLI11) and validation of every option value.
// A bad value throws UsageError with a one-line message naming the option and the fix.
#pragma once

#include "bench/run_config.h"

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace bench {

// What to measure: every workload x workers value x loader, with `base` for the rest.
struct Plan {
  std::vector<std::string> workloads;
  std::vector<std::string> loaders;
  std::vector<int64_t> workers;
  std::vector<int64_t> prefetches;
  std::vector<int64_t> batch_sizes;
  RunConfig base;
  bool json = false;
  bool data_dir_given = false;  // else fmnist reads kDefaultFmnistDir, jpeg a generated set
  int64_t jpeg_count = 2000;    // images in the generated jpeg set
  std::string csv;              // --csv FILE
  std::string plot;             // --plot FILE.png
  // --repeat: runs of each configuration; the one with the median rate is kept (samples/s,
  // or for mploader-auto its settled samples/s), so that one lucky or unlucky run does not
  // decide a comparison on a noisy machine.
  int64_t repeat = 1;
};

// Fills `plan`. Returns false when it printed the help (exit 0); throws UsageError.
bool parse_command_line(int argc, char** argv, Plan& plan);

// Whether the command line says --workload NAME (or --workload=NAME): the workloads with a
// command line of their own are chosen before any parse.
bool wants_workload(int argc, char** argv, const char* name);

// Parses a workload's own command line (--workload tokens, remote) into `app`'s options.
// Returns false when it printed the help; throws UsageError naming `help_command` otherwise.
bool parse_workload_command_line(CLI::App& app, int argc, char** argv,
                                 const std::string& help_command);

// Parsers for option values, exposed for reuse. `option` is the option's name, e.g.
// "--workers", and `example` a good value for the error message.
int64_t parse_count(const std::string& option, const std::string& text, int64_t min,
                    const std::string& example);
std::vector<int64_t> parse_count_list(const std::string& option, const std::string& text,
                                      int64_t min, const std::string& example);
std::vector<std::string> parse_name_list(const std::string& option, const std::string& text,
                                         const std::vector<std::string>& allowed);

}  // namespace bench
