#include <mploader/worker_info.h>

#include "util/splitmix.h"
#include "worker/worker_info_setter.h"

namespace mploader {
namespace {
std::optional<WorkerInfo> g_worker_info;  // set once in each worker, right after fork
}  // namespace

std::optional<WorkerInfo> worker_info() { return g_worker_info; }

namespace {
// splitmix64 steps over (seed, epoch, n): nearby inputs give unrelated seeds.
uint64_t mix_three(uint64_t seed, uint64_t epoch, uint64_t n) {
  using detail::splitmix64;
  return splitmix64(splitmix64(splitmix64(seed) ^ epoch) ^ n);
}
}  // namespace

uint64_t worker_seed(uint64_t seed, uint64_t epoch, int worker_id) {
  return mix_three(seed, epoch, static_cast<uint64_t>(worker_id));
}

// The same steps over the complemented seed, so that sample 3's seed is not worker 3's.
uint64_t sample_seed(uint64_t seed, uint64_t epoch, int64_t index) {
  return mix_three(~seed, epoch, static_cast<uint64_t>(index));
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
