// core/: the Dataset contract, tensors, collation, batch planning and assembly, on either
// side of the fork.
//
// The stage times datasets report (mploader/stage_timer.h), per thread: the worker takes them
// after each batch to split the batch's reading time.
#pragma once

#include <cstdint>

namespace mploader::detail {

struct DatasetStageTimes {
  uint64_t decode_ns = 0;
  uint64_t transform_ns = 0;
};

// What the calling thread's dataset reported since the last call; starts the count again.
DatasetStageTimes take_dataset_stage_times() noexcept;

}  // namespace mploader::detail
