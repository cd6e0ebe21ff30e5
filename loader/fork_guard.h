// Checks before workers are forked: CUDA initialised in this process cannot be used in a
// forked child (an error), and threads other than mploader's may hold locks that stay locked in
// the children (a warning).
#pragma once

namespace mploader::detail {

// Throws OptionError("start_method") when a CUDA context exists; logs a warning when other
// threads run.
void check_fork_safety(int num_workers);

}  // namespace mploader::detail
