// Fork-per-configuration: the child measures and writes JSON lines (or one "!error" line) to a
// pipe; the parent reads them back and reaps the child.
#include "bench/isolate.h"

#include "bench/report.h"

#include <ATen/Parallel.h>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <sstream>
#include <stdexcept>
#include <string>

namespace bench {

namespace {

constexpr const char* kErrorTag = "!error ";

void write_all(int fd, const std::string& text) {
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

[[noreturn]] void child_main(int fd, const std::function<std::vector<RunResult>()>& run) {
  int status = 0;
  std::string out;
  try {
    // After fork, libtorch replaces its intra-op thread pool on first use, and that swap is
    // not thread-safe: do it here, before any runner starts threads that would race on it.
    at::init_num_threads();
    for (const RunResult& r : run()) out += json_line(r) + "\n";
  } catch (const std::exception& e) {
    std::string message = e.what();
    for (char& c : message) c = (c == '\n') ? ' ' : c;
    out = kErrorTag + message + "\n";
    status = 1;
  }
  write_all(fd, out);
  close(fd);
  _exit(status);  // no atexit handlers or static destructors of the parent's state
}

std::string read_all(int fd) {
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return text;
    text.append(buf, static_cast<size_t>(n));
  }
}

int reap(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
  }
  return status;
}

// The run process must not outlive the bench, even one killed with SIGKILL: it would go on
// measuring, at full speed, for nobody. PDEATHSIG fires when the thread that forked exits; that
// is the bench's main thread (isolate.h), so it means "the bench is gone". mploader's workers
// die with the run process in turn (their own PDEATHSIG), and pytorch's python with it too
// (bench/runners/run_pytorch.cc).
void die_with_bench(pid_t bench) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != bench) _exit(1);  // the bench died before prctl took effect
}

}  // namespace

std::vector<RunResult> run_isolated(const RunConfig& config,
                                    const std::function<std::vector<RunResult>()>& run) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  const pid_t bench = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    die_with_bench(bench);
    close(fds[0]);
    child_main(fds[1], run);
  }
  close(fds[1]);
  const std::string text = read_all(fds[0]);
  close(fds[0]);
  const int status = reap(pid);
  std::vector<RunResult> results;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(kErrorTag, 0) == 0) throw std::runtime_error(line.substr(std::strlen(kErrorTag)));
    if (!line.empty()) results.push_back(parse_json_line(config, line));
  }
  if (WIFSIGNALED(status)) {
    throw std::runtime_error(std::string("the run crashed: ") + strsignal(WTERMSIG(status)) +
                             " (signal " + std::to_string(WTERMSIG(status)) + ")");
  }
  if (results.empty()) throw std::runtime_error("the run ended with no result");
  return results;
}

}  // namespace bench
