#include "process/fork_guard.h"

#include "util/log.h"
#include "process/launcher.h"

#include <mploader/errors.h>

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/detail/CUDAHooksInterface.h>

#include <algorithm>
#include <atomic>
#include <string>

namespace mploader::detail {
namespace {

// True when this process has created a CUDA context on any device. Never initialises CUDA.
bool cuda_initialised() {
  if (!at::globalContext().hasCUDA()) return false;
  const auto& hooks = at::detail::getCUDAHooks();
  for (int device = 0; device < hooks.getNumGPUs(); ++device) {
    if (hooks.hasPrimaryContext(device)) return true;
  }
  return false;
}

}  // namespace

void check_fork_safety(int workers_to_fork) {
  // Forking after CUDA is initialised is safe as long as the child never calls CUDA, and
  // mploader's workers never do (pinning and device copies happen in this process). Only
  // dataset or collate code that uses CUDA breaks, so this is a note, not an error: a training
  // loop that uses the GPU must be able to restart non-persistent workers every epoch.
  static std::atomic<bool> noted{false};
  if (cuda_initialised() && !noted.exchange(true)) {
    log().info("mploader: CUDA is initialised in this process; forked workers inherit no "
               "usable CUDA context, so dataset and collate code must not use CUDA (use "
               "start_method spawn or forkserver if it must).");
  }
  const int others = detail::foreign_thread_count();
  // libtorch's OpenMP pool keeps its threads (intra-op threads - 1) parked in a barrier once an
  // op ran in parallel, so a training program that touched a tensor has them. They hold no lock
  // a worker needs: workers start a pool of their own (run_worker). Only threads beyond them
  // are worth a warning.
  const int pool = std::max(0, at::get_num_threads() - 1);
  if (others > pool) {
    log().warn("mploader: forking {} workers while {} other thread(s) run in this process "
               "(your own threads, a library's; {} of them may be libtorch's intra-op pool, "
               "which is harmless). A lock one of them holds at that moment stays locked in "
               "the workers for ever; if workers hang at start, create the Loader before "
               "those threads start, or use start_method spawn.",
               workers_to_fork, others, pool);
  } else if (others > 0) {
    log().debug("mploader: forking {} workers beside {} thread(s), no more than libtorch's "
                "intra-op pool ({}); the workers start their own pool",
                workers_to_fork, others, pool);
  }
}

}  // namespace mploader::detail
