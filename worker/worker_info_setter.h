// Sets what mploader::worker_info() returns; called in a new worker before its first task.
#pragma once

#include <mploader/worker_info.h>

namespace mploader::worker {
void set_worker_info(const WorkerInfo& info);
// A persistent worker moving to a new epoch.
void set_worker_epoch(uint64_t epoch, uint64_t seed);
}  // namespace mploader::worker
