// Lifecycle guarantees: whatever way the training process ends, its workers follow within a
// second and nothing of ours is left behind; creating and destroying loaders leaks nothing.
#include "crash_test_support.h"

#include <mploader/embedding.h>

#include <catch2/catch.hpp>

#include <dirent.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

namespace test_lifecycle {

using namespace mploader;
using testing_datasets::CountingDataset;

namespace {

class SlowDataset : public CountingDataset {
 public:
  SlowDataset(size_t n, int sample_ms) : CountingDataset(n), sample_ms_(sample_ms) {}
  Sample get(int64_t index) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(sample_ms_));
    return CountingDataset::get(index);
  }

 private:
  int sample_ms_;
};

int count_entries(const std::string& dir) {
  int n = 0;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

// The entries of `dir` that mploader itself could have named: a ring on a filesystem without
// O_TMPFILE is mkostemp's "mploader-XXXXXX" (six letters or digits), unlinked at once
// (ipc/shm_region.cc). Other programs' entries, and the tests' own "mploader-test-...", come
// and go on a shared machine and are not ours to count.
int count_ring_names(const std::string& dir) {
  const std::string prefix = "mploader-";
  int n = 0;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      n += name.size() == prefix.size() + 6 && name.rfind(prefix, 0) == 0 &&
           std::all_of(name.begin() + prefix.size(), name.end(),
                       [](unsigned char c) { return std::isalnum(c) != 0; });
    }
    closedir(d);
  }
  return n;
}

// Distinct shared-memory files (memfd or /dev/shm) this process maps: the rings, wherever they
// live, for as long as anything of a loader holds them.
int count_mapped_shm() {
  std::ifstream maps("/proc/self/maps");
  std::set<std::pair<std::string, std::string>> files;  // (device, inode)
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream fields(line);
    std::string range, perms, offset, device, inode, path;
    fields >> range >> perms >> offset >> device >> inode;
    std::getline(fields >> std::ws, path);
    const bool shared = path.rfind("/memfd:", 0) == 0 || path.rfind("/dev/shm/", 0) == 0;
    if (inode != "0" && shared) files.emplace(device, inode);
  }
  return static_cast<int>(files.size());
}

// Processes whose parent is this process (live ones and zombies).
int count_children() {
  int n = 0;
  const std::string me = std::to_string(getpid());
  if (DIR* d = opendir("/proc")) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      std::ifstream stat(std::string("/proc/") + e->d_name + "/stat");
      std::string line;
      std::getline(stat, line);
      const size_t close_paren = line.rfind(')');
      if (close_paren == std::string::npos) continue;
      std::istringstream rest(line.substr(close_paren + 2));
      std::string state, ppid;
      rest >> state >> ppid;
      n += ppid == me;
    }
    closedir(d);
  }
  return n;
}

// Waits until every pid in `pids` (our children by subreaping) is reaped; seconds taken, or a
// negative number if some were still there after `limit_s`.
double reap_all(std::vector<int> pids, double limit_s) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    for (auto it = pids.begin(); it != pids.end();) {
      it = waitpid(*it, nullptr, WNOHANG) == *it || (kill(*it, 0) != 0 && errno == ESRCH)
               ? pids.erase(it)
               : it + 1;
    }
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (pids.empty()) return t;
    if (t > limit_s) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// Forks a "training process" that builds a loader on `shm_dir`, reports its worker pids
// through a pipe and then runs `then`. Returns the child's pid and the worker pids.
std::pair<int, std::vector<int>> start_training(const std::string& shm_dir,
                                                const std::function<void(Loader&)>& then) {
  int pipe_fds[2];
  REQUIRE(pipe(pipe_fds) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    close(pipe_fds[0]);
    LoaderOptions o;
    o.num_workers = 2;
    o.batch_size = 2;
    o.shm_dir = shm_dir;
    o.persistent_workers = true;
    Loader loader(std::make_shared<SlowDataset>(100000, 5), o);
    loader.next();
    for (int pid : loader.worker_pids()) {
      if (write(pipe_fds[1], &pid, sizeof pid) != sizeof pid) _exit(2);
    }
    close(pipe_fds[1]);
    then(loader);
    _exit(0);
  }
  close(pipe_fds[1]);
  std::vector<int> pids(2);
  for (int& pid : pids) REQUIRE(read(pipe_fds[0], &pid, sizeof pid) == sizeof pid);
  close(pipe_fds[0]);
  return {child, pids};
}

// Waits until `pid` leads a process group of its own (setpgid(0, 0)); false if it did not
// within 10 s. The training process below calls it once its SIGINT handler is in place (Catch2's
// own handler, inherited, makes the signal mask no sign of that).
bool wait_until_group_leader(int pid) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (getpgid(pid) == pid) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

struct Subreaper {  // orphaned workers come to us, so the test can see them end
  Subreaper() { prctl(PR_SET_CHILD_SUBREAPER, 1); }
  ~Subreaper() { prctl(PR_SET_CHILD_SUBREAPER, 0); }
};

}  // namespace

// The workers of a dead main process go at once (PR_SET_PDEATHSIG), within a second on an idle
// machine; the tests wait 10 s, which holds on a loaded one. Workers left behind would stay.
constexpr double kWorkersGoWithinS = 10.0;

TEST_CASE("lifecycle: the main process SIGKILLed takes its workers with it, leaving no file",
          "[lifecycle][process]") {
  Subreaper subreaper;
  const std::string dir = crash_testing::fresh_dir();
  auto [child, workers] = start_training(dir, [](Loader& loader) {
    for (;;) loader.next();
  });
  kill(child, SIGKILL);
  REQUIRE(waitpid(child, nullptr, 0) == child);
  const double seconds = reap_all(workers, kWorkersGoWithinS);
  CHECK(seconds >= 0);
  CHECK(count_entries(dir) == 0);
}

TEST_CASE("lifecycle: SIGINT handled by the training loop ends it cleanly", "[lifecycle][process]") {
  Subreaper subreaper;
  const std::string dir = crash_testing::fresh_dir();
  static volatile sig_atomic_t interrupted = 0;
  auto [child, workers] = start_training(dir, [](Loader& loader) {
    signal(SIGINT, [](int) { interrupted = 1; });
    setpgid(0, 0);  // after the handler: the test waits for this
    while (!interrupted) loader.next();
  });
  REQUIRE(wait_until_group_leader(child));  // its handler is in place: SIGINT is no longer fatal
  kill(child, SIGINT);
  for (int w : workers) kill(w, SIGINT);  // Ctrl-C reaches the whole process group
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(reap_all(workers, kWorkersGoWithinS) >= 0);
  CHECK(count_entries(dir) == 0);
}

TEST_CASE("lifecycle: a worker SIGKILLed leaves no file either", "[lifecycle][process]") {
  const std::string dir = crash_testing::fresh_dir();
  {
    LoaderOptions o = crash_testing::crash_options(2, crash_testing::fresh_dir());
    o.shm_dir = dir;
    Loader loader(std::make_shared<CountingDataset>(400), o);
    REQUIRE(loader.next());
    kill(loader.worker_pids()[0], SIGKILL);
    CHECK_THROWS_AS([&] { while (loader.next()) {} }(), WorkerCrashed);
  }
  CHECK(count_entries(dir) == 0);
}

TEST_CASE("lifecycle: destroying a loader mid-epoch stops its workers after their sample",
          "[lifecycle][process]") {
  // Workers see the stop between samples: on an idle machine the loader is gone within 100 ms
  // plus a sample. The slow ways out take far longer: a worker that ignored the stop is killed
  // after a 5 s grace, and the rest of the epoch (1000 samples of 30 ms on 2 workers) takes
  // 15 s. 2.5 s tells them apart on a loaded machine too.
  constexpr int kSampleMs = 30;
  auto loader = std::make_unique<Loader>(std::make_shared<SlowDataset>(1000, kSampleMs),
                                         crash_testing::crash_options(2, "/tmp"));
  REQUIRE(loader->next());
  const auto start = std::chrono::steady_clock::now();
  loader.reset();
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  CHECK(ms < 2500);
}

TEST_CASE("lifecycle: a loader built in a short-lived thread keeps its workers",
          "[lifecycle][process]") {
  std::unique_ptr<Loader> loader;
  std::thread([&] {
    LoaderOptions o;
    o.num_workers = 2;
    o.batch_size = 10;
    o.persistent_workers = true;
    loader = std::make_unique<Loader>(std::make_shared<CountingDataset>(200), o);
  }).join();  // the constructing thread is gone; PR_SET_PDEATHSIG must not fire
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  size_t batches = 0;
  while (loader->next()) ++batches;
  CHECK(batches == 20);
}

TEST_CASE("lifecycle: 1,000 create/destroy cycles leave fds, threads, children and /dev/shm "
          "as they were", "[lifecycle][process][slow]") {
  // Every 10th cycle sizes its slots with the probe process (100 probes in all); the others
  // give max_batch_bytes, so that the 1,000 cycles stay within the test's time under ASan.
  auto cycle = [](bool probe) {
    LoaderOptions o;
    o.num_workers = 2;
    o.batch_size = 5;
    if (!probe) o.max_batch_bytes = 4096;
    Loader loader(std::make_shared<CountingDataset>(20), o);
    REQUIRE(loader.next());
  };
  cycle(true);  // the launcher thread starts once per process
  const int fds = count_entries("/proc/self/fd");
  const int threads = count_entries("/proc/self/task");
  const int children = count_children();
  const int named = count_ring_names("/dev/shm");
  const int mapped = count_mapped_shm();
  for (int i = 0; i < 1000; ++i) cycle(i % 10 == 0);
  CHECK(count_entries("/proc/self/fd") == fds);
  CHECK(count_entries("/proc/self/task") == threads);
  CHECK(count_children() == children);
  CHECK(count_ring_names("/dev/shm") == named);
  CHECK(count_mapped_shm() == mapped);
}

}  // namespace test_lifecycle

namespace test_lifecycle_hooks {

using namespace mploader;

// Counted in this process; the child's hook marks the child, whose samples then say so.
std::atomic<int> g_before{0}, g_in_parent{0};
bool g_child_hook_ran = false;  // set in each child by its hook, before the worker starts

class ReportsChildHook : public testing_datasets::CountingDataset {
 public:
  ReportsChildHook() : CountingDataset(40) {}
  Sample get(int64_t) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // the kill lands mid-epoch
    return {{"hooked", at::scalar_tensor(g_child_hook_ran ? 1 : 0, at::kLong)}};
  }
};

TEST_CASE("lifecycle: the fork hooks run around every fork of a worker, restarts included",
          "[lifecycle][process]") {
  ForkHooks hooks;
  hooks.before = [] { g_before.fetch_add(1); };
  hooks.in_parent = [] { g_in_parent.fetch_add(1); };
  hooks.in_child = [] { g_child_hook_ran = true; };
  set_fork_hooks(hooks);
  LoaderOptions o;
  o.num_workers = 2;
  o.batch_size = 3;
  o.crash_dir = "/tmp/mploader-test-crashes";
  o.max_restarts_per_epoch = 1;
  {
    Loader loader(std::make_shared<ReportsChildHook>(), o);
    std::optional<Batch> first = loader.next();
    REQUIRE(first);
    kill(loader.worker_pids()[0], SIGKILL);
    int64_t hooked = first->tensors()["hooked"].sum().item<int64_t>();
    while (auto b = loader.next()) hooked += b->tensors()["hooked"].sum().item<int64_t>();
    CHECK(hooked == 40);  // every sample was read in a child whose hook ran
  }
  set_fork_hooks(ForkHooks{});
  CHECK(g_before.load() >= 4);  // the slot probe, two workers, and the one that replaced one
  CHECK(g_in_parent.load() == g_before.load());
  CHECK_FALSE(g_child_hook_ran);  // never in this process
}

}  // namespace test_lifecycle_hooks
