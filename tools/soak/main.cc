// mploader-soak: many epochs of mploader with random worker kills, alternating persistent and
// non-persistent workers, checking that every index is delivered exactly once per epoch and
// that the process's fds, threads, children, shared memory and RSS stay flat (tools/soak/run.h).
//
//   mploader-soak                                  # the 200-epoch soak, ~2 minutes
//   mploader-soak --epochs 30 --check-from 10      # the short one CI runs ("soak: short")
//
// Progress and the verdict go to stdout; mploader's own warnings to stderr (its restart
// warnings are counted, not printed). Exit: 0 PASS, 1 FAIL, 2 a bad option.
#include "tools/soak/log.h"
#include "tools/soak/options.h"
#include "tools/soak/run.h"

#include <exception>
#include <iostream>

int main(int argc, char** argv) {
  // Before anything logs: mploader takes the logger it finds registered.
  bench::soak::LoaderLogTally::install();
  try {
    bench::soak::SoakOptions options;
    if (!bench::soak::parse_soak_options(argc, argv, options)) return 0;
    return bench::soak::run_soak(options, std::cout);
  } catch (const bench::soak::SoakUsageError& e) {
    std::cerr << "mploader-soak: " << e.what() << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "mploader-soak: " << e.what() << '\n';
    return 1;
  }
}
