// Checks before workers are forked: CUDA initialised in this process cannot be used in a
// forked child (noted once: mploader's workers never use CUDA), and threads other than
// mploader's may hold locks that stay locked in the children (a warning).
#pragma once

namespace mploader::detail {

// Logs once when a CUDA context exists; logs a warning when other threads run.
void check_fork_safety(int num_workers);

}  // namespace mploader::detail
