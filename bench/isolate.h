// Runs each configuration in a forked child of mploader-bench, so that no run inherits what an
// earlier one left in the process (heap layout and malloc thresholds, lazily started thread
// pools, caches), and a loader that crashes is reported instead of ending the bench.
#pragma once

#include "bench/run_config.h"

#include <functional>
#include <vector>

namespace bench {

// Forks; the child calls `run` and sends its results back as JSON lines. Throws
// std::runtime_error with the child's error, or the signal that killed it. The child is killed
// when the calling thread ends (PR_SET_PDEATHSIG): call it from the main thread only.
std::vector<RunResult> run_isolated(const RunConfig& config,
                                    const std::function<std::vector<RunResult>()>& run);

}  // namespace bench
