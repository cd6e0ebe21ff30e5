// mploader-soak's command line. Each value is checked; a mistake is a SoakUsageError whose
// one-line message names the option, the value and the fix (main exits with 2).
#pragma once

#include "tools/soak/inject.h"

#include <cstdint>
#include <stdexcept>
#include <string>

namespace bench::soak {

// A bad command-line value.
class SoakUsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What one soak runs. The defaults are the 200-epoch soak (docs/contributing.md, "Soak").
struct SoakOptions {
  int64_t epochs = 200;
  int64_t workers = 2;         // fork workers of each of the two loaders
  int64_t samples = 4096;      // dataset size: every index once per epoch
  int64_t batch_size = 32;
  int64_t payload_bytes = 4096;  // per sample, beside its index
  double kill_probability = 0.5;  // chance that an epoch has kills at all
  int64_t max_kills = 2;       // kills per epoch at most; also max_restarts_per_epoch
  uint64_t seed = 1;           // the kills' schedule and the loaders' shuffling
  int64_t check_from = 10;     // the epoch whose counts the later ones must equal
  int64_t report_every = 10;   // a progress line every this many epochs
  std::string shm_dir;         // LoaderOptions::shm_dir; "" is memfd
  std::string crash_dir;       // "" is a fresh folder under /tmp, removed at the end
  Injection inject = Injection::kNone;  // a fault planted after epoch check_from (self-test)
};

// Fills `options` from the command line. Returns false when it printed the help (exit 0);
// throws SoakUsageError.
bool parse_soak_options(int argc, char** argv, SoakOptions& options);

}  // namespace bench::soak
