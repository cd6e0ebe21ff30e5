// The names --inject-fault accepts, apart from the faults themselves
// (bench/runners/fault_injection.cc) so that the command line's parser (cli.cc) links without
// the library: the fuzz target of the --config TOML files (fuzz/fuzz_bench_config.cc) builds
// cli.cc alone.
#include "bench/runners/fault_injection.h"

namespace bench {

const std::vector<std::string>& fault_names() {
  static const std::vector<std::string> names = {"segv", "bus",  "fpe",       "abort", "oom",
                                                 "kill", "exit", "exception", "hang"};
  return names;
}

}  // namespace bench
