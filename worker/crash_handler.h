// Crash capture inside a worker. On SIGSEGV, SIGBUS, SIGFPE, SIGILL or SIGABRT a handler on an
// alternate stack writes a CrashRecord (signal, si_code, fault address, thread, raw return
// addresses, the sample and batch in progress, the phase) into the worker's shared region,
// restores the default action and re-raises, so the exit status stays true. SIGUSR2 asks a
// live worker for its stack (used when it hangs): the handler fills the region's stack-dump
// record and returns.
//
// Everything that runs in the handlers is async-signal-safe. Symbolization happens in the
// main process, never here.
#pragma once

#include "ipc/region_layout.h"
#include "ipc/status.h"

#include <signal.h>

namespace mploader::worker {

// The signal the main process sends to ask a worker for its stack.
constexpr int kStackDumpSignal = SIGUSR2;

// Call once per worker process, before the first task.
ipc::Status install_crash_handlers(ipc::RegionHeader& header);

}  // namespace mploader::worker
