#include "process/worker_process.h"

#include <mploader/embedding.h>

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>

namespace mploader::detail {
namespace {

// The training program's handlers (checkpoint on SIGTERM, a test framework's crash reporter)
// must not run in a worker: they would act as if they were the main process.
void reset_signal_handlers() {
  for (int sig : {SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGSEGV, SIGBUS, SIGFPE, SIGILL,
                  SIGABRT, SIGPIPE, SIGALRM, SIGCHLD}) {
    signal(sig, SIG_DFL);
  }
  // Ctrl-C reaches the whole process group; the main process decides how workers stop.
  signal(SIGINT, SIG_IGN);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  stack_t no_stack{};
  no_stack.ss_flags = SS_DISABLE;
  sigaltstack(&no_stack, nullptr);
}

[[noreturn]] void child_main(pid_t parent, const std::function<int()>& body) {
  reset_signal_handlers();
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(0);  // the parent died before prctl took effect
  int code = 1;
  try {
    code = body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mploader: worker process %d stopped: %s\n", static_cast<int>(getpid()),
                 e.what());
    code = kWorkerLoopFailed;
  } catch (...) {
    code = kWorkerLoopFailed;
  }
  _exit(code);
}

ExitStatus from_siginfo(const siginfo_t& info) {
  ExitStatus s;
  if (info.si_code == CLD_EXITED) {
    s.exit_code = info.si_status;
  } else {
    s.signal = info.si_status;
    s.core_dumped = info.si_code == CLD_DUMPED;
  }
  return s;
}

ExitStatus from_wait_status(int64_t raw) {
  const int status = static_cast<int>(raw);
  ExitStatus s;
  if (WIFEXITED(status)) {
    s.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    s.signal = WTERMSIG(status);
    s.core_dumped = WCOREDUMP(status);
  }
  return s;
}

// A foreign worker's status, once its parent has written it (it reaps within milliseconds
// of the exit, so waiting a second is generous).
std::optional<ExitStatus> foreign_exit(ProcessRef p, bool wait_for_it) {
  for (int waited = 0;; waited += 5) {
    const int64_t raw = p.foreign_status->load(std::memory_order_acquire);
    if (raw >= 0) return from_wait_status(raw);
    if (!wait_for_it || waited >= 1000) return std::nullopt;
    timespec ts{0, 5 * 1000 * 1000};
    nanosleep(&ts, nullptr);
  }
}

bool pidfd_readable(int pidfd) {
  pollfd pfd{pidfd, POLLIN, 0};
  return pidfd >= 0 && poll(&pfd, 1, 0) > 0;
}

// The embedding runtime's fork hooks (set_fork_hooks), copied under the lock by each fork.
std::mutex g_fork_hooks_mutex;
ForkHooks g_fork_hooks;  // GUARDED_BY(g_fork_hooks_mutex)

ForkHooks current_fork_hooks() {
  std::lock_guard<std::mutex> lock(g_fork_hooks_mutex);
  return g_fork_hooks;
}

}  // namespace

ipc::UniqueFd open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return ipc::UniqueFd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
#else
  errno = ENOSYS;
  return ipc::UniqueFd();
#endif
}

pid_t fork_with_hooks() {
  const ForkHooks hooks = current_fork_hooks();
  if (hooks.before) hooks.before();
  const pid_t pid = fork();
  const int fork_errno = errno;
  if (pid == 0) {
    if (hooks.in_child) hooks.in_child();
    return 0;
  }
  if (hooks.in_parent) hooks.in_parent();
  errno = fork_errno;
  return pid;
}

ipc::Result<WorkerProcess> fork_worker(const std::function<int()>& body) {
  const pid_t parent = getpid();
  const pid_t pid = fork_with_hooks();
  if (pid == 0) child_main(parent, body);
  if (pid < 0) return ipc::last_error("fork");
  WorkerProcess p;
  p.pid = pid;
  p.pidfd = open_pidfd(pid);
  if (!p.pidfd && (errno == EMFILE || errno == ENFILE)) {
    // Only an old kernel may go without a pidfd; out of descriptors, the rest would fail too.
    const ipc::SysError error = ipc::last_error("pidfd_open", "watching a new worker");
    kill(pid, SIGKILL);
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    return error;
  }
  return p;
}

}  // namespace mploader::detail

namespace mploader {

void set_fork_hooks(const ForkHooks& hooks) {
  std::lock_guard<std::mutex> lock(detail::g_fork_hooks_mutex);
  detail::g_fork_hooks = hooks;
}

}  // namespace mploader

namespace mploader::detail {

std::string ExitStatus::describe() const {
  if (signal == 0) return "exited with code " + std::to_string(exit_code);
  const char* name = strsignal(signal);
  return "killed by signal " + std::to_string(signal) + " (" + (name ? name : "?") + ")" +
         (core_dumped ? ", core dumped" : "");
}

std::optional<ExitStatus> peek_exit(ProcessRef process) {
  if (process.foreign_status != nullptr) {
    const bool gone = pidfd_readable(process.pidfd) || (kill(process.pid, 0) != 0 && errno == ESRCH);
    return foreign_exit(process, gone);
  }
  const pid_t pid = process.pid;
  siginfo_t info;
  std::memset(&info, 0, sizeof info);
  int rc;
  do {
    rc = waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT);
  } while (rc < 0 && errno == EINTR);
  if (rc < 0 || info.si_pid == 0) return std::nullopt;
  return from_siginfo(info);
}

ExitStatus reap(ProcessRef process) {
  if (process.foreign_status != nullptr) {
    return foreign_exit(process, true).value_or(ExitStatus{SIGKILL, 0, false});
  }
  const pid_t pid = process.pid;
  siginfo_t info;
  std::memset(&info, 0, sizeof info);
  int rc;
  do {
    rc = waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED);
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) return ExitStatus{};  // ECHILD: already reaped (SIGCHLD ignored by the app)
  return from_siginfo(info);
}

bool wait_exit(ProcessRef process, int timeout_ms) {
  if (process.pidfd >= 0) {
    pollfd p{process.pidfd, POLLIN, 0};
    int rc;
    do {
      rc = poll(&p, 1, timeout_ms);
    } while (rc < 0 && errno == EINTR);
    return rc > 0;
  }
  for (int waited = 0;; waited += 5) {
    if (peek_exit(process).has_value()) return true;
    if (waited >= timeout_ms) return false;
    timespec ts{0, 5 * 1000 * 1000};
    nanosleep(&ts, nullptr);
  }
}

}  // namespace mploader::detail
