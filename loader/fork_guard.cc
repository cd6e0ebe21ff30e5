#include "loader/fork_guard.h"

#include "loader/log.h"
#include "worker/launcher.h"

#include <mploader/errors.h>

#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>

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

void check_fork_safety(int num_workers) {
  if (cuda_initialised()) {
    throw OptionError("start_method",
                      "mploader: CUDA is initialised in this process, and a forked worker "
                      "cannot use or even safely inherit a CUDA context. Create the Loader "
                      "before the first CUDA call, or keep CUDA out of the workers and move "
                      "batches to the GPU in the training loop (workers never need CUDA).");
  }
  const int others = worker::foreign_thread_count();
  if (others > 0) {
    log().warn("mploader: forking {} workers while {} other thread(s) run in this process "
               "(libtorch's intra-op pool, your own threads). A lock one of them holds at that "
               "moment stays locked in the workers for ever; if workers hang at start, create "
               "the Loader before other threads start.",
               num_workers, others);
  }
}

}  // namespace mploader::detail
