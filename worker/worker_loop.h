// The body of a worker process: take a task from the ring, load its samples, collate them
// into shared memory, publish the result, repeat until told to stop or the parent is gone.
#pragma once

#include "ipc/event_fd.h"
#include "ipc/region_layout.h"

#include <mploader/collate.h>
#include <mploader/dataset.h>
#include <mploader/worker_info.h>

#include <functional>

#include <sys/types.h>

namespace mploader::worker {

struct WorkerContext {
  int worker_id = 0;
  pid_t parent_pid = 0;
  ipc::RegionView region;
  int task_event_fd = -1;  // main -> worker: tasks were pushed
  int done_event_fd = -1;  // worker -> main: results were pushed
  int socket_fd = -1;      // worker's end, for sending overflow segments
  bool allow_overflow = true;
  Dataset* dataset = nullptr;
  Collator* collator = nullptr;
  int num_workers = 0;
  uint64_t base_seed = 0;    // LoaderOptions::seed
  uint64_t first_epoch = 0;  // the epoch current when the worker starts
  int64_t rank = 0;
  // LoaderOptions::worker_init; runs once before the first task.
  std::function<void(const WorkerInfo&)> init;
};

// Exit code of a worker whose worker_init threw; the text is in RegionHeader::init_error.
constexpr int kInitFailedExit = 71;

// Runs until shutdown; returns the process exit code (0 on an orderly shutdown).
int run_worker(const WorkerContext& context);

}  // namespace mploader::worker
