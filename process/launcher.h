// Forking from one long-lived thread. PR_SET_PDEATHSIG fires when the *thread* that forked a
// child exits, not the process: were workers forked by whatever thread built a Loader, they
// would be killed when that thread ended. The launcher thread lives as long as the process, so
// the death signal means "the main process is gone" and nothing else.
//
// Thread-safe; any thread may ask for a fork. The launcher is started on first use and never
// stopped (it sleeps on a condition variable when idle).
#pragma once

#include "process/worker_process.h"

#include <functional>
#include <shared_mutex>

namespace mploader::detail {

// fork_worker(body) run on the launcher thread; blocks the caller until the fork is done.
ipc::Result<WorkerProcess> fork_from_launcher(const std::function<int()>& body);

// Threads of this process that are not mploader's own (the launcher and supervisors) nor
// jemalloc's purger: those that may hold a lock across fork. -1 if unknown.
int foreign_thread_count();
// Supervisors report themselves so that they are not counted as foreign.
void note_own_thread(int delta);

// mploader's own background threads hold this shared while they work (they allocate, log, read
// /proc); the launcher holds it exclusively around fork(). So none of them is ever inside an
// allocator or a lock at the moment of fork: the child would inherit that lock held for ever
// (seen with ASan's allocator, which, unlike glibc's malloc, is not locked across fork).
std::shared_mutex& fork_gate();

}  // namespace mploader::detail
