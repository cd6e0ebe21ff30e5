#include "process/spawn.h"

#include "ipc/unique_fd.h"
#include "process/forkserver.h"
#include "worker/worker_main.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <vector>

namespace mploader {
namespace {

std::vector<std::string> g_argv;  // the program's arguments, for spawned workers
std::atomic<bool> g_initialized{false};

}  // namespace

void init(int argc, char** argv) {
  g_argv.assign(argv, argv + argc);
  g_initialized.store(true);
  worker::run_if_spawned();
  detail::serve_if_forkserver();
}

bool initialized() { return g_initialized.load(); }

namespace detail {

void exec_self(const char* name, const std::string& value, const std::vector<int>& fds) {
  // In the new process only (this is the child of a fork): the parent's copies keep
  // FD_CLOEXEC, so a program the training process runs inherits none of them.
  for (int fd : fds) {
    if (!ipc::set_cloexec(fd, false)) return;
  }
  if (setenv(name, value.c_str(), 1) != 0) return;
  std::vector<char*> args;
  for (std::string& a : g_argv) args.push_back(a.data());
  args.push_back(nullptr);
  execv("/proc/self/exe", args.data());
}

void exec_worker(const worker::WorkerSpec& spec, int spec_fd) {
  std::vector<int> kept{spec.region_fd, spec.task_event_fd, spec.done_event_fd, spec.socket_fd,
                        spec_fd};
  if (spec.settings.dataset_config) kept.push_back(spec.settings.dataset_config->fd());
  for (int fd : worker::dataset_fds_of(spec)) kept.push_back(fd);
  exec_self(worker::kSpawnEnv, std::to_string(spec_fd), kept);
}

}  // namespace detail
}  // namespace mploader
