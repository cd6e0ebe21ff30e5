#include <mploader/worker_info.h>

#include "util/splitmix.h"
#include "worker/worker_info_setter.h"

namespace mploader {
namespace {
std::optional<WorkerInfo> g_worker_info;  // set once in each worker, right after fork
}  // namespace

std::optional<WorkerInfo> worker_info() { return g_worker_info; }

// sample_seed() (core/loading_scope.cc) mixes the complemented seed, so that sample 3's seed
// is not worker 3's.
uint64_t worker_seed(uint64_t seed, uint64_t epoch, int worker_id) {
  return detail::splitmix64(detail::mix_seed(seed, epoch) ^ static_cast<uint64_t>(worker_id));
}

namespace worker {
void set_worker_info(const WorkerInfo& info) { g_worker_info = info; }
void set_worker_epoch(uint64_t epoch, uint64_t seed) {
  if (!g_worker_info) return;
  g_worker_info->epoch = epoch;
  g_worker_info->seed = seed;
}
}  // namespace worker

}  // namespace mploader
