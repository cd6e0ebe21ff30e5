// Runs PyTorch's torch.utils.data.DataLoader through bench/pytorch_dataloader.py under the
// project's Python (MPLOADER_PYTHON: the environment of the libtorch mploader was built with, by
// default the .venv with torch 2.13; $MPLOADER_BENCH_PYTHON overrides it) and reads back its
// JSON lines.
#include "bench/report.h"
#include "bench/run_config.h"
#include "bench/runners/python_child.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>

#ifndef MPLOADER_PYTHON
#define MPLOADER_PYTHON "/usr/bin/python3"
#endif

#ifndef MPLOADER_BENCH_SCRIPTS
#error "MPLOADER_BENCH_SCRIPTS must list the paths of the bench's scripts, ':' between them"
#endif

namespace bench {

// The interpreter that runs PyTorch's side, and where that choice came from.
std::string python() {
  const char* chosen = std::getenv("MPLOADER_BENCH_PYTHON");
  return chosen != nullptr && *chosen != '\0' ? chosen : MPLOADER_PYTHON;
}

std::string python_fix() {
  return std::string("run scripts/install-deps (it makes .venv with torch and numpy), or set "
                     "MPLOADER_BENCH_PYTHON to a python3 that has them");
}

// An installed bench finds the script installed beside it (MPLOADER_BENCH_SCRIPT_INSTALL_DIR,
// relative to the binary's folder); a bench in its build tree, the one in the source tree, in
// bench/ or in the folder of the component whose workload runs it (MPLOADER_BENCH_SCRIPTS).
std::string script_path(const std::string& file) {
  const std::string name = "/" + file;
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
  const std::string scripts = std::string(MPLOADER_BENCH_SCRIPTS) + ":";
  for (size_t at = 0, end; (end = scripts.find(':', at)) != std::string::npos; at = end + 1) {
    const std::string path = scripts.substr(at, end - at);
    const bool named = path.size() > name.size() &&
                       path.compare(path.size() - name.size(), name.size(), name) == 0;
    if (named) return path;
  }
  return file;  // no such script: the caller's "not readable" names it
}

namespace {

// In the child between fork and exec (async-signal-safe calls only): stdin from /dev/null,
// stdout to `out_fd` (or /dev/null, stderr too, when -1), then exec. PDEATHSIG, which exec
// keeps, kills python when the process that forked it dies: run_child runs in the run process
// of bench/isolate.h, itself killed with the bench, so python never outlives a killed bench.
[[noreturn]] void exec_child(pid_t parent, char* const* argv, int out_fd) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // the parent died before prctl took effect
  const int null_in = open("/dev/null", O_RDONLY | O_CLOEXEC);
  const int null_out = open("/dev/null", O_WRONLY | O_CLOEXEC);
  dup2(null_in, 0);
  dup2(out_fd >= 0 ? out_fd : null_out, 1);
  if (out_fd < 0) dup2(null_out, 2);
  execv(argv[0], argv);
  _exit(127);
}

}  // namespace

// Runs argv[0] with stdin from /dev/null and stderr inherited. Returns the exit status (127
// when it could not start, 128+N when killed by signal N); its stdout goes to `out` when given,
// else to /dev/null. Call from a thread that outlives the child (see exec_child).
int run_child(const std::vector<std::string>& args, std::string* out) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) exec_child(parent, argv.data(), out != nullptr ? fds[1] : -1);
  close(fds[1]);
  char buf[4096];
  for (ssize_t n; pid > 0 && (n = read(fds[0], buf, sizeof buf)) != 0;) {
    if (n > 0 && out != nullptr) out->append(buf, static_cast<size_t>(n));
    if (n < 0 && errno != EINTR) break;
  }
  close(fds[0]);
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s;
  for (int64_t d : shape) s += (s.empty() ? "" : ",") + std::to_string(d);
  return s;
}

// The script's --data-dir: the folder (of tars for the tar workload), or the stream workload's
// corpus file.
std::string data_path(const RunConfig& config) {
  if (config.workload == "jpeg") return config.jpeg_dir;
  if (config.workload == "stream") return config.corpus;
  if (config.workload == "tar") return config.tar_dir;
  return config.data_dir;
}

}  // namespace

bool pytorch_available(std::string& reason) {
  const std::string py = python();
  if (access(py.c_str(), X_OK) != 0) {
    reason = py + " not found: " + python_fix();
    return false;
  }
  if (access(script_path("pytorch_dataloader.py").c_str(), R_OK) != 0) {
    reason = script_path("pytorch_dataloader.py") + " not readable";
    return false;
  }
  if (run_child({py, "-c", "import torch, numpy"}, nullptr) != 0) {
    reason = py + " cannot import torch and numpy: " + python_fix();
    return false;
  }
  return true;
}

std::vector<RunResult> run_pytorch(const RunConfig& config) {
  std::string out;
  const int status = run_child(
      {python(), script_path("pytorch_dataloader.py"), "--workload", config.workload, "--data-dir", data_path(config),
       "--sample-shape", shape_text(config.sample_shape), "--context",
       std::to_string(config.context), "--workers", std::to_string(config.workers),
       "--batch-size", std::to_string(config.batch_size), "--batches",
       std::to_string(config.batches), "--prefetch", std::to_string(config.prefetch), "--step-ms",
       std::to_string(config.step_ms)},
      &out);
  if (status != 0) {
    throw std::runtime_error("pytorch: " + script_path("pytorch_dataloader.py") + " exited with status " +
                             std::to_string(status) + " (its stderr is above)");
  }
  std::vector<RunResult> results;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    try {
      results.push_back(parse_json_line(config, line));
    } catch (const std::exception& e) {
      throw std::runtime_error("pytorch: unexpected line from " + script_path("pytorch_dataloader.py") + " (" +
                               e.what() + "): " + line);
    }
  }
  if (results.empty()) throw std::runtime_error("pytorch: " + script_path("pytorch_dataloader.py") + " printed no result");
  return results;
}

}  // namespace bench
