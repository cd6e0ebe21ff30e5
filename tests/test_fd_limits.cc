// Open-file limits: the descriptors a loader holds are measured, preflight's estimate matches
// them, a limit too low is an error naming RLIMIT_NOFILE with the numbers and the fix, and a
// descriptor that cannot be created anywhere says the same instead of a bare strerror.
//
// Every case that lowers RLIMIT_NOFILE does it in a forked child, so the test binary keeps its
// own limit.
#include "ipc/status.h"
#include "test_datasets.h"

#include <mploader/logging.h>

#include <catch2/catch.hpp>

#include <dirent.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace test_fd_limits {

using namespace mploader;
using testing_datasets::CountingDataset;

namespace {

// Descriptors open in this process, leaving out files under /proc: the supervisor's thread
// opens a worker's /proc files for an instant as it samples memory, which is no descriptor the
// loader holds.
int64_t open_fds() {
  int64_t n = 0;
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  const int own = dirfd(d);
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] == '.' || std::atoi(e->d_name) == own) continue;
    char target[256];
    const std::string link = std::string("/proc/self/fd/") + e->d_name;
    const ssize_t len = readlink(link.c_str(), target, sizeof target - 1);
    if (len < 0) continue;  // closed meanwhile
    if (std::string(target, static_cast<size_t>(len)).rfind("/proc/", 0) == 0) continue;
    ++n;
  }
  closedir(d);
  return n;
}

// Runs `body` in a forked child; returns its exit code, or -1 when it did not exit normally.
int in_child(const std::function<int()>& body) {
  std::fflush(nullptr);
  const pid_t child = fork();
  if (child == 0) {
    int code = 99;
    try {
      code = body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: unexpected exception: %s\n", e.what());
    }
    std::fflush(nullptr);
    _exit(code);
  }
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

LoaderOptions fd_options(int64_t workers, StartMethod method) {
  LoaderOptions o;
  o.num_workers = workers;
  o.batch_size = 4;
  o.prefetch_factor = 1;  // two slots per worker: holding batches soon overflows them
  o.start_method = method;
  return o;
}

// One epoch holding every batch, so that most of them arrive as overflow segments: the
// main process receives a descriptor for each (and closes it once mapped).
bool run_epoch_holding_batches(Loader& loader) {
  std::vector<Batch> held;
  while (auto b = loader.next()) held.push_back(std::move(*b));
  return held.size() == 16;
}

void set_nofile(int64_t soft, int64_t hard) {
  rlimit limit{static_cast<rlim_t>(soft), static_cast<rlim_t>(hard)};
  if (setrlimit(RLIMIT_NOFILE, &limit) != 0) std::perror("setrlimit");
}

// Descriptors a loader adds to the main process, measured in a fresh child (which also starts
// its own forkserver, as a program does on its first forkserver loader). -1 on failure.
int measured_fds(int64_t workers, StartMethod method) {
  return in_child([&] {
    const int64_t before = open_fds();
    Loader loader(std::make_shared<CountingDataset>(64), fd_options(workers, method));
    const int64_t after = open_fds();
    // Overflow segments are closed once mapped: the count stays flat through the epoch.
    std::vector<Batch> held;
    while (auto b = loader.next()) {
      held.push_back(std::move(*b));
      if (open_fds() != after) return 97;
    }
    return held.size() == 16 ? static_cast<int>(after - before) : 98;
  });
}

const char* method_name(StartMethod m) {
  return m == StartMethod::kFork ? "fork" : m == StartMethod::kSpawn ? "spawn" : "forkserver";
}

std::string read_all(int fd) {
  std::string text;
  char buf[4096];
  ssize_t n;
  for (off_t at = 0; (n = pread(fd, buf, sizeof buf, at)) > 0; at += n) text.append(buf, n);
  return text;
}

}  // namespace

TEST_CASE("fd limits: the estimate matches the descriptors a loader really holds",
          "[preflight][process][fds]") {
  for (StartMethod method : {StartMethod::kFork, StartMethod::kSpawn, StartMethod::kForkserver}) {
    for (int64_t workers : {1, 2, 4}) {
      INFO(method_name(method) << ", " << workers << " workers");
      const int measured = measured_fds(workers, method);
      CAPTURE(measured);
      REQUIRE(measured > 0);
      REQUIRE(measured < 90);
#if defined(__SANITIZE_ADDRESS__)
      // Under ASan+UBSan the exact fit fails for forkserver alone: preflight counts the
      // server's socket as still to come (6 open + 1), which the plain build does not. The
      // plain build checks it.
      if (method == StartMethod::kForkserver) continue;
#endif
      // The limit that just admits the measured descriptors plus the two that are in passing
      // (an overflow segment being received, a /proc file the supervisor reads): preflight
      // must accept it, and a whole epoch of overflow batches must run under it.
      int64_t in_passing = 2;
#if defined(__SANITIZE_ADDRESS__)
      // UBSan's vptr check opens a pipe the first time it meets a type (to probe that the
      // vtable is readable) and calls the object invalid when pipe() fails: with both
      // descriptors in passing in use, that is EMFILE. The runtime's pair is not the loader's.
      in_passing += 2;
#endif
      const int fits = in_child([&] {
        const int64_t now = open_fds();
        set_nofile(now + measured + in_passing, now + measured + in_passing);
        Loader loader(std::make_shared<CountingDataset>(64), fd_options(workers, method));
        return run_epoch_holding_batches(loader) ? 0 : 1;
      });
      CHECK(fits == 0);
#if defined(__SANITIZE_ADDRESS__)
      // Below the need, the slot-size probe meets EMFILE first; under UBSan its thread start
      // then fails the vptr check (which needs a spare descriptor) and exits the child.
      continue;  // not "skipped: ": the fitting half above did run
#endif
      // One below what is held for certain: refused at construction (by preflight, or by the
      // slot-size probe's EMFILE, whose text names the limit too).
      const int refused = in_child([&] {
        const int64_t now = open_fds();
        set_nofile(now + measured - 1, now + measured - 1);
        try {
          Loader loader(std::make_shared<CountingDataset>(64), fd_options(workers, method));
        } catch (const Error& e) {
          const std::string text = e.what();
          return text.find("RLIMIT_NOFILE") != std::string::npos ? 0 : 2;
        }
        return 1;
      });
      CHECK(refused == 0);
    }
  }
}

TEST_CASE("fd limits: a hard limit too low is an error with both limits, the need and the fix",
          "[preflight][process][fds]") {
  const int code = in_child([] {
    const int64_t now = open_fds();
    const int64_t limit = now + 8;  // 2 workers need 13 more
    set_nofile(limit, limit);
    try {
      Loader loader(std::make_shared<CountingDataset>(64), fd_options(2, StartMethod::kFork));
    } catch (const Error& e) {
      const std::string text = e.what();
      const std::string l = std::to_string(limit);
      for (const std::string& part : {std::string("RLIMIT_NOFILE"), std::string("ulimit -n"),
                                      "soft limit " + l, "hard limit " + l,
                                      "need " + std::to_string(now + 15), std::string("2 workers")}) {
        if (text.find(part) == std::string::npos) {
          std::fprintf(stderr, "missing '%s' in: %s\n", part.c_str(), e.what());
          return 2;
        }
      }
      return 0;
    }
    return 1;
  });
  CHECK(code == 0);
}

TEST_CASE("fd limits: a low soft limit is raised up to the hard limit, and logged",
          "[preflight][process][fds]") {
  const int code = in_child([] {
    const int64_t now = open_fds();
    // Below the need (now + 15) but with a few spare: the capture below takes one, and under
    // UBSan every vptr check that misses its cache opens a pipe.
    set_nofile(now + 8, now + 1000);
    set_log_level(LogLevel::kInfo);
    std::fflush(stderr);
    const int capture = memfd_create("stderr", 0);
    if (capture < 0 || dup2(capture, 2) != 2) return 3;
    {
      Loader loader(std::make_shared<CountingDataset>(64), fd_options(2, StartMethod::kFork));
      if (!run_epoch_holding_batches(loader)) return 1;
    }
    rlimit limit{};
    getrlimit(RLIMIT_NOFILE, &limit);
    // Raised to what the loader needs, not to the hard limit: select() users stay safe.
    if (static_cast<int64_t>(limit.rlim_cur) < now + 15) return 4;
    if (static_cast<int64_t>(limit.rlim_cur) >= now + 1000) return 5;
    std::fflush(stderr);
    const std::string log = read_all(capture);
    return log.find("RLIMIT_NOFILE") != std::string::npos ? 0 : 6;
  });
  CHECK(code == 0);
}

TEST_CASE("fd limits: EMFILE and ENFILE name the limit and the fix, never a bare strerror",
          "[preflight][fds]") {
  rlimit limit{};
  REQUIRE(getrlimit(RLIMIT_NOFILE, &limit) == 0);
  const std::string emfile = ipc::SysError{"eventfd", EMFILE, {}}.describe();
  CHECK_THAT(emfile, Catch::StartsWith("eventfd: Too many open files") &&
                         Catch::Contains("RLIMIT_NOFILE") && Catch::Contains("ulimit -n") &&
                         Catch::Contains(std::to_string(limit.rlim_cur)));
  const std::string enfile = ipc::SysError{"memfd_create", ENFILE, {}}.describe();
  CHECK_THAT(enfile, Catch::Contains("fs.file-max"));
  CHECK(ipc::SysError{"mmap", ENOMEM, {}}.describe() == "mmap: Cannot allocate memory");
}

namespace {

// In a worker: leaves the worker no descriptor to spare, and returns a sample too large for
// a ring slot, so the worker must create an overflow segment (memfd_create: EMFILE).
class ExhaustingDataset : public CountingDataset {
 public:
  using CountingDataset::CountingDataset;
  Sample get(int64_t index) override {
    if (worker_info()) {
      rlimit limit{};
      getrlimit(RLIMIT_NOFILE, &limit);
      limit.rlim_cur = 0;
      setrlimit(RLIMIT_NOFILE, &limit);
    }
    return {{"x", at::full({8192}, static_cast<double>(index), at::kFloat)}};
  }
};

}  // namespace

TEST_CASE("fd limits: a worker out of descriptors says which limit and how to raise it",
          "[preflight][process][fds]") {
#if defined(__SANITIZE_ADDRESS__)
  // UBSan's vptr check probes memory through a pipe: in a process with no descriptor left it
  // reports every virtual call as invalid and exits, before our error path can speak.
  WARN("skipped: a worker with no descriptor left cannot run under the sanitizers");
  return;
#endif
  LoaderOptions o;
  o.num_workers = 1;
  o.batch_size = 2;
  o.max_batch_bytes = 4096;  // a batch is 64 KiB: it needs an overflow segment
  Loader loader(std::make_shared<ExhaustingDataset>(8), o);
  std::string text;
  try {
    loader.next();
  } catch (const Error& e) {
    text = e.what();
  }
  CHECK_THAT(text, Catch::Contains("memfd_create") && Catch::Contains("RLIMIT_NOFILE") &&
                       Catch::Contains("ulimit -n"));
}

}  // namespace test_fd_limits
