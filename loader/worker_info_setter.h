// Sets what mploader::worker_info() returns; called in a new worker before its first task.
#pragma once

#include <mploader/worker_info.h>

namespace mploader::detail {
void set_worker_info(const WorkerInfo& info);
}  // namespace mploader::detail
