// worker/: what runs inside a worker process.
//
// The body of a worker process: take a task from the ring, load its samples, collate them
// into shared memory, publish the result, repeat until told to stop or the parent is gone.
#pragma once

#include "ipc/event_fd.h"
#include "ipc/region_layout.h"
#include "worker/worker_spec.h"

#include <mploader/collate.h>
#include <mploader/dataset.h>
#include <mploader/worker_info.h>

#include <functional>

namespace mploader::worker {

// What the worker loop runs with: the worker's spec as the main process built it, and what
// only this process has (its mapping of the region, the dataset and collator it holds).
struct WorkerContext {
  WorkerSpec spec;
  ipc::RegionView region;  // the worker's region, mapped in this process
  Dataset* dataset = nullptr;
  Collator* collator = nullptr;
  // LoaderOptions::worker_init; runs once before the first task. Forked workers only: a
  // function cannot cross an exec, so it is beside the spec, not in it.
  std::function<void(const WorkerInfo&)> init;
};

// Exit code of a worker whose worker_init threw; the text is in RegionHeader::init_error.
constexpr int kInitFailedExit = 71;
// Exit code of a worker whose own descriptors (task and done eventfds) were closed under it,
// by dataset code that closes descriptors it did not open: it can neither hear of a task nor
// say one is done, so it exits rather than spin or leave the main process waiting.
constexpr int kDescriptorsClosedExit = 73;

// Runs until shutdown; returns the process exit code (0 on an orderly shutdown).
int run_worker(const WorkerContext& context);

}  // namespace mploader::worker
