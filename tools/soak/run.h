// mploader-soak's run: two Loaders over one dataset take epochs in turn, one with persistent
// workers and one without; workers are SIGKILLed at random batches of a seeded subset of
// epochs (at most --max-kills an epoch, the loaders' max_restarts_per_epoch), every epoch's
// deliveries are checked exactly once, and after each epoch the process's fds, threads,
// children, shared memory and RSS are measured and must stay flat from --check-from on.
#pragma once

#include "tools/soak/options.h"

#include <iosfwd>

namespace bench::soak {

// Runs the soak. Writes a header, a line every report_every epochs and the verdict line
// ("PASS: ..." or "FAIL: ...") to `out`. Returns the exit status: 0 on PASS, 1 on FAIL.
int run_soak(const SoakOptions& options, std::ostream& out);

}  // namespace bench::soak
