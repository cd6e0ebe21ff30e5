// Runs PyTorch's torch.utils.data.DataLoader through pytorch_dataloader.py under
// /usr/bin/python3 (Debian's python3-torch) and reads back its JSON lines.
#include "report.h"
#include "run_config.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <sstream>
#include <stdexcept>

#ifndef MPLOADER_BENCH_SCRIPT_DIR
#error "MPLOADER_BENCH_SCRIPT_DIR must name the folder of pytorch_dataloader.py"
#endif

extern char** environ;

namespace bench {

namespace {

constexpr const char* kPython = "/usr/bin/python3";

// An installed bench finds the script installed beside it (MPLOADER_BENCH_SCRIPT_INSTALL_DIR,
// relative to the binary's folder); a bench in its build tree, the one in the source tree.
std::string script_path() {
  const std::string name = "/pytorch_dataloader.py";
#ifdef MPLOADER_BENCH_SCRIPT_INSTALL_DIR
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    std::string dir(exe, static_cast<size_t>(n));
    dir.erase(dir.find_last_of('/'));
    const std::string installed = dir + "/" + MPLOADER_BENCH_SCRIPT_INSTALL_DIR + name;
    if (access(installed.c_str(), R_OK) == 0) return installed;
  }
#endif
  return std::string(MPLOADER_BENCH_SCRIPT_DIR) + name;
}

// Runs argv[0] with stdin from /dev/null and stderr inherited. Returns the exit status (-1 when
// it could not start, 128+N when killed by signal N); its stdout goes to `out` when given,
// else to /dev/null.
int run_child(const std::vector<std::string>& args, std::string* out) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  if (out != nullptr) {
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  } else {
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  }
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_addclose(&actions, fds[1]);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int err = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  char buf[4096];
  for (ssize_t n; err == 0 && (n = read(fds[0], buf, sizeof buf)) != 0;) {
    if (n > 0 && out != nullptr) out->append(buf, static_cast<size_t>(n));
    if (n < 0 && errno != EINTR) break;
  }
  close(fds[0]);
  if (err != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s;
  for (int64_t d : shape) s += (s.empty() ? "" : ",") + std::to_string(d);
  return s;
}


}  // namespace

bool pytorch_available(std::string& reason) {
  if (access(kPython, X_OK) != 0) {
    reason = std::string(kPython) + " not found (apt-get install python3-torch)";
    return false;
  }
  if (access(script_path().c_str(), R_OK) != 0) {
    reason = script_path() + " not readable";
    return false;
  }
  if (run_child({kPython, "-c", "import torch, numpy"}, nullptr) != 0) {
    reason = std::string(kPython) + " cannot import torch and numpy (apt-get install python3-torch)";
    return false;
  }
  return true;
}

std::vector<RunResult> run_pytorch(const RunConfig& config) {
  std::string out;
  const int status = run_child(
      {kPython, script_path(), "--workload", config.workload, "--data-dir",
       config.workload == "jpeg" ? config.jpeg_dir : config.data_dir,
       "--sample-shape", shape_text(config.sample_shape), "--workers",
       std::to_string(config.workers), "--batch-size", std::to_string(config.batch_size),
       "--batches", std::to_string(config.batches), "--prefetch", std::to_string(config.prefetch)},
      &out);
  if (status != 0) {
    throw std::runtime_error("pytorch: " + script_path() + " exited with status " +
                             std::to_string(status) + " (its stderr is above)");
  }
  std::vector<RunResult> results;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    try {
      results.push_back(parse_json_line(config, line));
    } catch (const std::exception& e) {
      throw std::runtime_error("pytorch: unexpected line from " + script_path() + " (" +
                               e.what() + "): " + line);
    }
  }
  if (results.empty()) throw std::runtime_error("pytorch: " + script_path() + " printed no result");
  return results;
}

}  // namespace bench
