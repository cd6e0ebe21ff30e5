// The entry of a worker that did not inherit the main process's memory (spawn, forkserver):
// it adopts its descriptors, rebuilds the dataset and collator from their recipes and runs the
// worker loop.
#pragma once

#include "worker/worker_loop.h"
#include "worker/worker_spec.h"

namespace mploader::worker {

// Marks the spec's descriptors close-on-exec, maps the region, rebuilds the dataset and
// collator, runs the worker loop and exits with its code.
[[noreturn]] void become_worker(WorkerSpec& spec);
// Called by mploader::init(): in a spawned worker, runs it and exits; otherwise returns.
void run_if_spawned();

}  // namespace mploader::worker
