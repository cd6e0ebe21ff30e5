// The operating system's edge cases around workers: a worker stopped by job control or a
// debugger is reported as stopped, not as a hang, and is still killed and reaped; a worker whose
// descriptors dataset code closed is reported as such, not waited for; a process
// that dataset code starts inherits none of mploader's descriptors; threads running at fork are
// warned about, libtorch's own intra-op pool not.
#include "crash_test_support.h"
#include "stderr_capture.h"

#include <mploader/registry.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <spawn.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

extern char** environ;  // unistd.h declares it only with _GNU_SOURCE

namespace test_os_edges {

using namespace mploader;
using namespace crash_testing;
using testing_datasets::CountingDataset;
using testing_datasets::StderrCapture;

namespace {

// The state letter of /proc/<pid>/stat: R, S, D, T (stopped), t (traced), Z, ...
char process_state(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  return paren == std::string::npos || paren + 2 >= text.size() ? '?' : text[paren + 2];
}

bool wait_for_state(int pid, char state) {
  for (int i = 0; i < 500; ++i) {
    if (process_state(pid) == state) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// Runs a one-worker loader with a timeout whose worker `stop` has stopped; returns the
// TimeoutError's text and report, and checks the worker is gone afterwards.
struct StoppedOutcome {
  bool timed_out = false;
  DeathCause cause = DeathCause::kOtherSignal;
  std::string message;
  nlohmann::json report;
};

StoppedOutcome run_with_stopped_worker(const std::function<bool(int)>& stop) {
  StoppedOutcome out;
  auto o = crash_options(1, fresh_dir());
  o.timeout = std::chrono::milliseconds(500);
  int pid = 0;
  {
    Loader loader(std::make_shared<CountingDataset>(64), o);
    pid = loader.worker_pids().at(0);
    REQUIRE(stop(pid));
    try {
      while (loader.next()) {
      }
    } catch (const TimeoutError& e) {
      out.timed_out = true;
      out.cause = e.cause();
      out.message = e.what();
      std::ifstream in(e.report_path());
      out.report = nlohmann::json::parse(in, nullptr, false);
    }
  }
  CHECK(process_gone(pid));  // killed although stopped, and reaped: not even a zombie
  return out;
}

}  // namespace

// Closes every descriptor above stderr in sample 3, as a dataset that "daemonizes" might.
class ClosingDataset : public CountingDataset {
 public:
  using CountingDataset::CountingDataset;
  Sample get(int64_t index) override {
    if (index == 3) {
      for (int fd = 3; fd < 4096; ++fd) close(fd);
    }
    return CountingDataset::get(index);
  }
};

TEST_CASE("closed descriptors: a worker whose eventfds dataset code closed is reported, not "
          "waited for", "[crash][process]") {
  LoaderOptions o;
  o.num_workers = 1;
  o.batch_size = 2;
  o.max_batch_bytes = 1 << 16;  // sample 3 is read by a worker of the epoch, not by the probe
  o.crash_dir = fresh_dir();
  Loader loader(std::make_shared<ClosingDataset>(8), o);
  try {
    for (Batch& b : loader) (void)b;
    FAIL("the epoch ended without an error");
  } catch (const WorkerCrashed& e) {
    CHECK(e.cause() == DeathCause::kExit);
    CHECK(e.exit_code() == 73);
    CHECK_THAT(std::string(e.what()), Catch::Contains("lost the descriptors") &&
                                          Catch::Contains("close only the ones your code opened"));
  }
}

TEST_CASE("stopped worker: SIGSTOP is reported as stopped (state T), not as a hang in get",
          "[crash][process][stopped]") {
  StoppedOutcome out = run_with_stopped_worker([](int pid) {
    return kill(pid, SIGSTOP) == 0 && wait_for_state(pid, 'T');
  });
  REQUIRE(out.timed_out);
  CHECK(out.cause == DeathCause::kHang);
  CHECK_THAT(out.message, Catch::Contains("stopped") && Catch::Contains("state T") &&
                              Catch::Contains("SIGCONT") && Catch::Contains("timeout"));
  CHECK_THAT(out.message, !Catch::Contains("no progress within the timeout (500 ms) in"));
  REQUIRE(out.report.is_object());
  CHECK_THAT(out.report["what_happened"].get<std::string>(), Catch::Contains("stopped"));
  CHECK(out.report["evidence"].get<std::string>().find("state T") != std::string::npos);
  CHECK(out.report["details"]["process_state"] == "T");
}

TEST_CASE("stopped worker: a worker held by a debugger is reported as traced (state t)",
          "[crash][process][stopped]") {
  bool attached = false;
  StoppedOutcome out = run_with_stopped_worker([&](int pid) {
    // The test process is the tracer, as gdb -p would be.
    attached = ptrace(PTRACE_SEIZE, pid, nullptr, nullptr) == 0 &&
               ptrace(PTRACE_INTERRUPT, pid, nullptr, nullptr) == 0;
    return !attached || wait_for_state(pid, 't');
  });
  if (!attached) {
    WARN("skipped: ptrace is not permitted here");
    return;
  }
  REQUIRE(out.timed_out);
  CHECK_THAT(out.message, Catch::Contains("state t") && Catch::Contains("debugger") &&
                              Catch::Contains("detach"));
  REQUIRE(out.report.is_object());
  CHECK(out.report["details"]["process_state"] == "t");
}

namespace {

// Starts `sleep 30` (fork + exec, by posix_spawn) from the first sample each worker loads, as
// dataset code calling a decoder or a shell would; "grandchild" holds its pid (0 otherwise).
class GrandchildDataset : public CountingDataset {
 public:
  using CountingDataset::CountingDataset;
  Sample get(int64_t index) override {
    Sample s = CountingDataset::get(index);
    int64_t pid = 0;
    if (worker_info() && !started_) {  // not in the main process's probe of sample 0
      started_ = true;
      pid = start_sleep();
    }
    s.set("grandchild", at::scalar_tensor(pid, at::kLong));
    return s;
  }
  std::optional<DatasetRecipe> recipe() const override {
    return DatasetRecipe{"grandchild", std::to_string(size())};
  }

 private:
  static int64_t start_sleep() {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    for (int fd = 0; fd < 3; ++fd) {
      posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", O_RDWR, 0);
    }
    char arg0[] = "sleep", arg1[] = "30";
    char* argv[] = {arg0, arg1, nullptr};
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, "/bin/sleep", &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    return rc == 0 ? pid : -rc;
  }
  bool started_ = false;
};

MPLOADER_REGISTER_DATASET("grandchild", [](const std::string& config) {
  return std::make_shared<GrandchildDataset>(std::stoul(config));
});

// The targets of /proc/<pid>/fd/*: "socket:[123]", "anon_inode:[eventfd]", "/memfd:x", ...
std::vector<std::string> fd_targets(int pid) {
  std::vector<std::string> out;
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd/";
  for (int fd = 0; fd < 4096; ++fd) {
    char target[512];
    const ssize_t n = readlink((dir + std::to_string(fd)).c_str(), target, sizeof target - 1);
    if (n > 0) out.push_back(std::to_string(fd) + " -> " + std::string(target, n));
  }
  return out;
}

bool is_mploader_kind(const std::string& link) {
  for (const char* kind : {"memfd:", "anon_inode:[eventfd]", "socket:", "anon_inode:[pidfd]",
                           "anon_inode:[signalfd]"}) {
    if (link.find(kind) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("inherited fds: a process that dataset code starts holds none of mploader's",
          "[lifecycle][process][fds]") {
  for (StartMethod method : {StartMethod::kFork, StartMethod::kSpawn, StartMethod::kForkserver}) {
    INFO("start method " << static_cast<int>(method));
    LoaderOptions o;
    o.num_workers = 2;
    o.batch_size = 4;
    o.start_method = method;
    Loader loader(std::make_shared<GrandchildDataset>(32), o);
    std::vector<int64_t> grandchildren;
    for (Batch& b : loader) {
      auto pids = b["grandchild"];
      for (int64_t i = 0; i < pids.size(0); ++i) {
        if (pids[i].item<int64_t>() != 0) grandchildren.push_back(pids[i].item<int64_t>());
      }
    }
    REQUIRE(grandchildren.size() == 2);
    for (int64_t pid : grandchildren) {
      REQUIRE(pid > 0);
      const std::vector<std::string> links = fd_targets(static_cast<int>(pid));
      for (const std::string& link : links) {
        INFO("grandchild " << pid << " holds " << link);
        CHECK_FALSE(is_mploader_kind(link));
      }
      kill(static_cast<pid_t>(pid), SIGKILL);
    }
  }
}

TEST_CASE("os edges: threads at fork are warned about, libtorch's intra-op pool is not",
          "[process][threads]") {
  // A training program that ran any op in parallel has libtorch's OpenMP pool: 2 intra-op
  // threads leave one pool thread parked.
  at::set_num_threads(2);
  std::atomic<int64_t> touched{0};
  at::parallel_for(0, 1 << 16, 1, [&](int64_t begin, int64_t end) { touched += end - begin; });
  REQUIRE(touched == (1 << 16));
  LoaderOptions o;
  o.num_workers = 2;
  o.batch_size = 4;
  const std::string warning = "other thread(s) run in this process";
  {
    StderrCapture log;
    Loader loader(std::make_shared<CountingDataset>(16), o);
    while (loader.next()) {
    }
    CHECK(log.text().find(warning) == std::string::npos);
  }
  // A thread of the program's own, waiting on a lock-protected condition, is one too many.
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  std::thread own([&] {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return done; });
  });
  std::string text;
  {
    StderrCapture log;
    Loader loader(std::make_shared<CountingDataset>(16), o);
    while (loader.next()) {
    }
    text = log.text();
  }
  {
    std::lock_guard<std::mutex> lock(m);
    done = true;
  }
  cv.notify_one();
  own.join();
  CHECK_THAT(text, Catch::Contains(warning) && Catch::Contains("libtorch's intra-op pool"));
}

}  // namespace test_os_edges
