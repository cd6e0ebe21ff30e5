// Checks before workers are forked: CUDA initialised in this process cannot be used in a
// forked child (noted once: mploader's workers never use CUDA), and threads other than
// mploader's and libtorch's intra-op pool may hold locks that stay locked in the children (a
// warning).
#pragma once

namespace mploader::detail {

// Logs once when a CUDA context exists; logs a warning when threads other than mploader's
// and libtorch's intra-op pool run.
void check_fork_safety(int workers_to_fork);

}  // namespace mploader::detail
