// Stage times reported by datasets (mploader/stage_timer.h, core/stage_times.h). Per thread, so
// reporting takes no lock; a worker builds its batches on one thread and takes them after each.
#include "core/stage_times.h"

#include <mploader/stage_timer.h>

namespace mploader {
namespace {
thread_local detail::DatasetStageTimes reported;
}  // namespace

void record_stage_time(DatasetStage stage, uint64_t ns) noexcept {
  (stage == DatasetStage::kDecode ? reported.decode_ns : reported.transform_ns) += ns;
}

namespace detail {
DatasetStageTimes take_dataset_stage_times() noexcept {
  const DatasetStageTimes taken = reported;
  reported = {};
  return taken;
}
}  // namespace detail

}  // namespace mploader
