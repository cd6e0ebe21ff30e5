// start_method forkserver: one clean server process per main process, started on first use by
// the same fork + exec as a spawned worker (so it has no threads, no CUDA, no locks of the
// training program, whenever it starts), which forks workers on request. A request carries a
// WorkerSpec and the worker's four descriptors (SCM_RIGHTS); the forked child becomes a worker
// exactly as a spawned one does. Workers are the server's children, not the main process's:
// the server reaps them and writes each wait status into the worker's region header, and the
// main process watches them through pidfds.
//
// Thread-safe: requests from several loaders are serialised.
#pragma once

#include "process/spawn.h"
#include "process/worker_process.h"

#include <atomic>

namespace mploader::detail {

// A new worker forked by this process's forkserver; `status` is where the server writes its
// wait status (the worker's RegionHeader::foreign_wait_status).
ipc::Result<WorkerProcess> start_via_forkserver(const worker::WorkerSpec& spec,
                                                const std::atomic<int64_t>* status);
// Whether this process's forkserver has been started (its socket is then already open).
bool forkserver_started();
// Called by mploader::init(): in the forkserver process, serves and exits; otherwise returns.
void serve_if_forkserver();

constexpr const char* kForkserverEnv = "MPLOADER_FORKSERVER";

}  // namespace mploader::detail
