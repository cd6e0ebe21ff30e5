// Starting, watching and reaping worker processes.
//
// Workers are tied to the main process three ways: PR_SET_PDEATHSIG(SIGKILL) set in the child,
// a getppid() check right after it (the parent may already be gone), and an idle-time getppid
// check in the worker loop. The main process watches each worker through a pidfd, which poll()
// reports readable when the worker exits, so no SIGCHLD handler is installed.
#pragma once

#include "ipc/status.h"
#include "ipc/unique_fd.h"

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <optional>
#include <string>

namespace mploader::detail {

// The exit status of a worker whose own loop raised an exception (EX_SOFTWARE); the exception's
// message goes to its stderr first.
constexpr int kWorkerLoopFailed = 70;

// A worker process and the one owner of its pidfd (the pool's WorkerChannel). Move-only; code
// that only watches the worker takes a ProcessRef.
struct WorkerProcess {
  pid_t pid = -1;
  ipc::UniqueFd pidfd;  // none without pidfd_open (an old kernel): callers poll with a timeout
  // Set for a worker that is not our child (a forkserver's): waitid cannot see it, and its
  // parent writes the wait status here once it has reaped it (-1 until then).
  const std::atomic<int64_t>* foreign_status = nullptr;
};

// A worker process as seen by code that does not own its pidfd: valid while the owner keeps
// it open. Made from a WorkerProcess implicitly, like a string_view from a string.
struct ProcessRef {
  pid_t pid;
  int pidfd;  // -1: none
  const std::atomic<int64_t>* foreign_status;

  ProcessRef(pid_t id, int fd, const std::atomic<int64_t>* status)
      : pid(id), pidfd(fd), foreign_status(status) {}
  // Implicit on purpose: every function that takes a ProcessRef takes a WorkerProcess too.
  ProcessRef(const WorkerProcess& p) : ProcessRef(p.pid, p.pidfd.get(), p.foreign_status) {}
};

// fork() with the embedding runtime's hooks around it (set_fork_hooks, mploader/embedding.h):
// every fork of a process that becomes a worker goes through here.
pid_t fork_with_hooks();
// Forks. In the child, ties it to the parent, runs `body` and _exit()s with its result, so no
// atexit handler or static destructor of the parent's runs twice. Returns in the parent only.
ipc::Result<WorkerProcess> fork_worker(const std::function<int()>& body);

struct ExitStatus {
  int signal = 0;     // terminating signal, 0 if it exited
  int exit_code = 0;  // when signal == 0
  bool core_dumped = false;
  std::string describe() const;  // "killed by signal 9 (Killed)" / "exited with code 3"
};

// The status of an exited worker without reaping it (WNOWAIT), or nullopt while it runs.
[[nodiscard]] std::optional<ExitStatus> peek_exit(ProcessRef process);
// Waits for the worker to exit and reaps it (a foreign worker's parent reaps it). Callers
// that only want the process gone may drop the status.
ExitStatus reap(ProcessRef process);
// Opens a pidfd for any process of ours (close-on-exec, as every pidfd is); none, with errno
// set, when it cannot: ENOSYS on an old kernel, EMFILE or ENFILE out of descriptors.
[[nodiscard]] ipc::UniqueFd open_pidfd(pid_t pid);
// Waits up to timeout_ms for the pidfd (or the pid) to exit. True when it has; callers that
// go on either way (a SIGKILLed worker that is slow to go) may drop it.
bool wait_exit(ProcessRef process, int timeout_ms);

}  // namespace mploader::detail
