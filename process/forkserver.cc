#include "process/forkserver.h"

#include "ipc/fd_passing.h"
#include "ipc/region_layout.h"
#include "process/launcher.h"
#include "worker/worker_main.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>

namespace mploader::detail {
namespace {

// The main process's side: the socket to its server, started on first use.
class ForkserverClient {
 public:
  bool started() {
    std::lock_guard<std::mutex> lock(mutex_);
    return socket_ && owner_ == getpid();
  }

  ipc::Result<pid_t> request(const worker::WorkerSpec& spec) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!socket_ || owner_ != getpid()) {
      ipc::Status started = start();
      if (!started.ok()) return started.error();
    }
    // The spec travels in a memfd: a socket message holds 64 KiB, a recipe may hold more.
    auto spec_fd = worker::spec_to_memfd(spec);
    if (!spec_fd.ok()) return spec_fd.error();
    std::vector<int> fds{spec.region_fd, spec.task_event_fd, spec.done_event_fd, spec.socket_fd,
                         spec_fd.value().get()};
    if (spec.settings.dataset_config) fds.push_back(spec.settings.dataset_config->fd());
    for (int fd : worker::dataset_fds_of(spec)) fds.push_back(fd);
    ipc::Status sent = ipc::send_message(socket_.get(), {"spec", fds});
    if (!sent.ok()) return sent.error();
    auto reply = ipc::receive_message(socket_.get());
    if (!reply.ok()) return reply.error();
    std::istringstream in(reply.value().text);
    std::string word;
    int64_t value = -1;
    in >> word >> value;
    if (word != "pid" || value <= 0) {
      return ipc::SysError{"forkserver", value < 0 ? static_cast<int>(-value) : EPROTO,
                           "the forkserver could not fork a worker"};
    }
    return static_cast<pid_t>(value);
  }

 private:
  // In a forked child this replaces (and closes) the parent's socket, which the child
  // inherited but must not use.
  ipc::Status start() {
    auto pair = ipc::make_socket_pair();
    if (!pair.ok()) return pair.error();
    const int child_end = pair.value().child.get();
    const std::string value = std::to_string(child_end) + " " + std::to_string(getpid());
    auto server = fork_from_launcher([&] {
      exec_self(kForkserverEnv, value, {child_end});
      return worker::kSpawnFailedExit;
    });
    pair.value().child.reset();  // the server has its copy
    if (!server.ok()) return server.error();
    // The server's pidfd goes with `server`: its socket tells us when it is gone.
    socket_ = std::move(pair.value().parent);
    owner_ = getpid();
    return ipc::Ok{};
  }

  std::mutex mutex_;
  ipc::UniqueFd socket_;
  pid_t owner_ = 0;  // a forked child must start its own server
};

// The server's side. Single-threaded.
class Forkserver {
 public:
  Forkserver(int socket, pid_t main_pid) : socket_(socket), main_pid_(main_pid) {}

  [[noreturn]] void serve() {
    signal(SIGINT, SIG_IGN);  // Ctrl-C reaches the process group; the main process decides
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != main_pid_) _exit(0);
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, &old_mask_);
    sigfd_.reset(signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK));
    for (;;) {
      pollfd fds[2] = {{socket_.get(), POLLIN, 0}, {sigfd_.get(), POLLIN, 0}};
      poll(fds, 2, 1000);
      if (getppid() != main_pid_) _exit(0);
      if (fds[1].revents & POLLIN) {
        signalfd_siginfo info;
        while (read(sigfd_.get(), &info, sizeof info) > 0) {
        }
      }
      reap_children();
      if (fds[0].revents & (POLLIN | POLLHUP)) handle_request();
    }
  }

 private:
  struct Child {
    void* mapping;
    size_t bytes;
  };

  void reap_children() {
    int status = 0;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
      auto it = children_.find(pid);
      if (it == children_.end()) continue;
      auto* header = static_cast<ipc::RegionHeader*>(it->second.mapping);
      header->foreign_wait_status.store(status, std::memory_order_release);
      munmap(it->second.mapping, it->second.bytes);
      children_.erase(it);
    }
  }

  void handle_request() {
    auto message = ipc::receive_message(socket_.get());
    if (!message.ok()) _exit(0);  // the main process closed its end
    std::vector<ipc::UniqueFd>& fds = message.value().fds;
    // The channel's four, the spec's, the dataset recipe's when there is one, and those the
    // recipe refers to.
    static_assert(6 + worker::kMaxDatasetFds <= ipc::kMaxFdsPerMessage);
    if (message.value().text != "spec" || fds.size() < 5) return reply(-EPROTO, fds);
    std::optional<worker::WorkerSpec> spec = worker::spec_from_fd(fds[4].get());
    fds[4].reset();  // read: the worker keeps none of its spec's bytes open
    const size_t config = spec && spec->config_fd >= 0 ? 1 : 0;
    if (!spec || fds.size() != 5 + config + spec->dataset_fd_numbers.size()) {
      return reply(-EPROTO, fds);
    }
    if (config == 1) spec->config_fd = fds[5].get();  // mapped by the worker
    for (size_t i = 0; i < spec->dataset_fd_numbers.size(); ++i) {
      spec->dataset_fd_numbers[i] = fds[5 + config + i].get();
    }
    spec->region_fd = fds[0].get();
    spec->task_event_fd = fds[1].get();
    spec->done_event_fd = fds[2].get();
    spec->socket_fd = fds[3].get();
    void* mapping = mmap(nullptr, spec->region_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
                         spec->region_fd, 0);
    if (mapping == MAP_FAILED) return reply(-errno, fds);
    const pid_t pid = fork_with_hooks();
    if (pid == 0) {  // the worker: it keeps `fds` (become_worker never returns)
      socket_.reset();
      sigfd_.reset();
      sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // dies with the server, which dies with main
      spec->parent_pid = getppid();
      worker::become_worker(*spec);
    }
    if (pid < 0) {
      munmap(mapping, spec->region_bytes);
      return reply(-errno, fds);
    }
    children_[pid] = Child{mapping, spec->region_bytes};
    reply(pid, fds);
  }

  void reply(int64_t pid_or_error, std::vector<ipc::UniqueFd>& fds) {
    fds.clear();  // the worker has its own copies
    const ipc::Status sent =
        ipc::send_message(socket_.get(), {"pid " + std::to_string(pid_or_error), {}});
    // Nothing to do about a failure here: the main process is gone or has closed its end, and
    // the next receive_message finds that and exits.
    (void)sent;
  }

  ipc::UniqueFd socket_;
  ipc::UniqueFd sigfd_;
  pid_t main_pid_;
  sigset_t old_mask_{};
  std::map<pid_t, Child> children_;
};

}  // namespace

ForkserverClient& forkserver_client() {
  static ForkserverClient* client = new ForkserverClient();  // lives as long as the process
  return *client;
}

bool forkserver_started() { return forkserver_client().started(); }

ipc::Result<WorkerProcess> start_via_forkserver(const worker::WorkerSpec& spec,
                                                const std::atomic<int64_t>* status) {
  auto pid = forkserver_client().request(spec);
  if (!pid.ok()) return pid.error();
  ipc::UniqueFd pidfd = open_pidfd(pid.value());
  if (!pidfd && (errno == EMFILE || errno == ENFILE)) {
    const ipc::SysError error = ipc::last_error("pidfd_open", "watching a new worker");
    kill(pid.value(), SIGKILL);  // the server reaps it
    return error;
  }
  return WorkerProcess{pid.value(), std::move(pidfd), status};
}

void serve_if_forkserver() {
  const char* text = std::getenv(kForkserverEnv);
  if (text == nullptr) return;
  std::istringstream in(text);
  int socket = -1;
  pid_t main_pid = 0;
  in >> socket >> main_pid;
  unsetenv(kForkserverEnv);
  if (!in || socket < 0) _exit(worker::kSpawnFailedExit);
  fcntl(socket, F_SETFD, FD_CLOEXEC);  // inheritable for the exec that started us only
  Forkserver(socket, main_pid).serve();
}

}  // namespace mploader::detail
