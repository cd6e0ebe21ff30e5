// worker_info(): which worker process the calling code runs in. Dataset code uses it to open
// per-worker resources or to shard work; it is empty in the main process.
#pragma once

#include <optional>

namespace mploader {

struct WorkerInfo {
  int id = 0;           // 0 .. num_workers - 1
  int num_workers = 0;
  int pid = 0;
};

// The calling process's worker, or nullopt in the main process (and with num_workers == 0).
std::optional<WorkerInfo> worker_info();

}  // namespace mploader
