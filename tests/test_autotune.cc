// num_workers = kAuto and prefetch_factor = kAuto: workers added and removed between batches
// keep every index exactly once and in order; the judged changes follow the loop and the
// workers (a slow loop sheds workers, workers that wait on I/O grow past the CPUs, workers
// that compute stay within them); the shared memory caps the slots; a death names the count.
#include "crash_test_support.h"
#include "loader/autotune.h"
#include "machine_load.h"
#include "util/cpu_budget.h"

#include <nlohmann/json.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

namespace test_autotune {

using namespace mploader;
namespace mpd = mploader::detail;
using testing_datasets::CountingDataset;

namespace {

// Sets the forced changes for one scope: the Loader reads them when constructed.
struct Churn {
  explicit Churn(int64_t every) { mpd::set_autotune_churn_for_testing(every); }
  ~Churn() { mpd::set_autotune_churn_for_testing(0); }
};

LoaderOptions auto_options() {
  LoaderOptions o;
  o.batch_size = 4;
  o.num_workers = kAuto;
  o.prefetch_factor = kAuto;
  o.timeout = std::chrono::seconds(60);
  o.crash_dir = crash_testing::fresh_dir();
  return o;
}

// Waits off the CPU, as a read from a slow store does.
class SleepyDataset : public CountingDataset {
 public:
  SleepyDataset(size_t n, std::chrono::microseconds wait) : CountingDataset(n), wait_(wait) {}
  Sample get(int64_t index) override {
    std::this_thread::sleep_for(wait_);
    return CountingDataset::get(index);
  }

 private:
  std::chrono::microseconds wait_;
};

// Computes: spins on its thread's CPU clock.
class SpinningDataset : public CountingDataset {
 public:
  using CountingDataset::CountingDataset;
  Sample get(int64_t index) override {
    const auto now = [] {
      timespec t{};
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
      return t.tv_sec * 1000000000ll + t.tv_nsec;
    };
    const long long until = now() + 1000000;
    while (now() < until) {
    }
    return CountingDataset::get(index);
  }
};

int64_t most_workers(const LoaderStats& s, int64_t start) {
  int64_t most = start;
  for (const AutotuneChange& c : s.autotune) most = std::max(most, c.workers_after);
  return most;
}

int64_t budget() { return std::max<int64_t>(1, mpd::cpu_budget().cpus()); }

// One epoch's indices in the order delivered; each sample's label must be its index.
std::vector<int64_t> epoch_indices(Loader& loader) {
  std::vector<int64_t> got;
  for (Batch& b : loader) {
    for (size_t i = 0; i < b.size(); ++i) {
      REQUIRE(b["label"][static_cast<int64_t>(i)].item<int64_t>() == b.indices()[i]);
      got.push_back(b.indices()[i]);
    }
  }
  return got;
}

// Workers queued for CPUs that other programs hold look like computing workers, which the
// autotuner rightly holds to the budget: a test of growth past it skips on a busy machine.
bool skipped_when_busy(const machine_load::CpuPressure& pressure, const LoaderStats& s) {
  const std::string busy = pressure.busy_reason();
  if (busy.empty()) return false;
  std::string last = s.autotune.empty() ? "no change" : s.autotune.back().reason;
  WARN("skipped: " << busy << "; the workers did not grow (last: " << last << ")");
  return true;
}

}  // namespace

TEST_CASE("autotune: 200 changes, every index once and in the fixed order in each epoch",
          "[autotune][process]") {
  // Forced steps come every other batch; a removal pending until its worker's tasks are back
  // makes some fail, more on a loaded machine: epochs of 1200 batches go on until 200 changes
  // were made (one epoch on an idle machine; 10 at most, against a hang).
  const size_t n = 4 * 1200;
  auto o = auto_options();
  o.shuffle = true;
  o.seed = 5;
  LoaderOptions fixed = o;
  fixed.num_workers = 2;
  fixed.prefetch_factor = 2;
  Loader reference(std::make_shared<CountingDataset>(n), fixed);  // before the churn is set
  Churn churn(2);
  Loader loader(std::make_shared<CountingDataset>(n), o);
  size_t changes = 0;
  for (int epoch = 0; epoch < 10 && changes < 200; ++epoch) {
    INFO("epoch " << epoch);
    const std::vector<int64_t> expected = epoch_indices(reference);
    CHECK(epoch_indices(loader) == expected);
    changes = loader.stats().autotune.size();
  }
  const LoaderStats s = loader.stats();
  INFO(s.autotune.size() << " changes");
  CHECK(s.autotune.size() >= 200);
  CHECK(most_workers(s, 1) ==
        std::min<int64_t>(mpd::kChurnMostWorkers, static_cast<int64_t>(s.workers.size())));
}

TEST_CASE("autotune: out of order, changes keep every index exactly once",
          "[autotune][process]") {
  const size_t n = 4 * 1600;
  auto o = auto_options();
  o.in_order = false;
  Churn churn(1);
  // 1 ms a sample: a worker being added takes a fork's time, and a change waits for it, so
  // faster samples leave fewer changes on a loaded machine (64 of 1600 batches seen at 200 us).
  // Epochs go on until 200 changes were made (one on an idle machine; 10 at most).
  Loader loader(std::make_shared<SleepyDataset>(n, std::chrono::microseconds(1000)), o);
  size_t changes = 0;
  for (int epoch = 0; epoch < 10 && changes < 200; ++epoch) {
    INFO("epoch " << epoch);
    std::vector<int> seen(n, 0);
    for (int64_t index : epoch_indices(loader)) ++seen[static_cast<size_t>(index)];
    for (size_t i = 0; i < n; ++i) REQUIRE(seen[i] == 1);
    changes = loader.stats().autotune.size();
  }
  CHECK(changes >= 200);
}

TEST_CASE("autotune: workers killed while the count changes are replaced, every index once",
          "[autotune][process]") {
  const size_t n = 4 * 400;
  auto o = auto_options();
  o.max_restarts_per_epoch = 10;
  Churn churn(3);
  Loader loader(std::make_shared<SleepyDataset>(n, std::chrono::microseconds(300)), o);
  std::vector<int> seen(n, 0);
  int kills = 0;
  for (Batch& b : loader) {
    for (int64_t index : b.indices()) ++seen[static_cast<size_t>(index)];
    if (kills < 3 && b.sequence() % 97 == 50) {
      for (int pid : loader.worker_pids()) {
        if (pid > 0) {
          kill(pid, SIGKILL);
          ++kills;
          break;
        }
      }
    }
  }
  CHECK(kills == 3);
  for (size_t i = 0; i < n; ++i) REQUIRE(seen[i] == 1);
}

TEST_CASE("autotune: a crash report names the workers running at the death",
          "[autotune][process]") {
  auto o = auto_options();
  o.persistent_workers = true;
  Loader loader(std::make_shared<SleepyDataset>(400, std::chrono::microseconds(300)), o);
  std::optional<Batch> first = loader.next();
  REQUIRE(first);
  const int64_t running = loader.stats().workers_running;
  kill(loader.worker_pids().at(0), SIGKILL);
  CHECK_THROWS_AS([&] { while (loader.next()) {} }(), WorkerCrashed);
  int reports = 0;
  for (const auto& entry : std::filesystem::directory_iterator(o.crash_dir)) {
    std::ifstream in(entry.path());
    const nlohmann::json options = nlohmann::json::parse(in)["details"]["options"];
    CHECK(options["workers_running"].get<int64_t>() == running);
    CHECK(options["num_workers"].get<int64_t>() == kAuto);
    ++reports;
  }
  CHECK(reports == 1);
}

TEST_CASE("autotune: a slow training loop sheds workers down to one", "[autotune][process]") {
  auto o = auto_options();
  o.persistent_workers = true;
  Loader loader(std::make_shared<CountingDataset>(4 * 60), o);
  for (Batch& b : loader) {
    (void)b;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const LoaderStats s = loader.stats();
  INFO(s.autotune.size() << " changes; running " << s.workers_running);
  CHECK(s.workers_running == 1);
  if (budget() > 1) {
    REQUIRE_FALSE(s.autotune.empty());
    CHECK_THAT(s.autotune.front().reason, Catch::Contains("wait for the loop"));
  }
}

TEST_CASE("autotune: workers that wait on I/O grow past the CPU budget",
          "[autotune][process]") {
  auto o = auto_options();
  o.batch_size = 8;
  const machine_load::CpuPressure pressure;
  Loader loader(std::make_shared<SleepyDataset>(8 * 400, std::chrono::milliseconds(2)), o);
  for (Batch& b : loader) (void)b;
  const LoaderStats s = loader.stats();
  INFO(s.autotune.size() << " changes; budget " << budget());
  for (const AutotuneChange& c : s.autotune) INFO(c.reason);
  if (most_workers(s, budget()) <= budget() && skipped_when_busy(pressure, s)) return;
  CHECK(most_workers(s, budget()) > budget());
  REQUIRE_FALSE(s.autotune.empty());
  CHECK(s.autotune.front().on_cpu < 0.5);
}

TEST_CASE("autotune: workers that compute stay within the CPU budget", "[autotune][process]") {
  auto o = auto_options();
  Loader loader(std::make_shared<SpinningDataset>(4 * 300), o);
  for (Batch& b : loader) (void)b;
  const LoaderStats s = loader.stats();
  CHECK(most_workers(s, budget()) <= budget());
  for (const AutotuneChange& c : s.autotune) CHECK(c.workers_after <= budget());
}

TEST_CASE("autotune: max_shm_bytes caps the worker slots", "[autotune][process]") {
  auto o = auto_options();
  o.max_batch_bytes = 1 << 20;
  // Rings of 5 slots of 1 MiB and a little more: 3 fit, 4 would need 20 MiB.
  o.max_shm_bytes = uint64_t{19} << 20;
  Churn churn(1);
  Loader loader(std::make_shared<CountingDataset>(4 * 50), o);
  for (Batch& b : loader) (void)b;
  const LoaderStats s = loader.stats();
  CHECK(s.workers.size() == 3);
  CHECK(most_workers(s, 1) == 3);
}

TEST_CASE("autotune: a fixed count whose rings pass max_shm_bytes is refused by name",
          "[autotune][process]") {
  auto o = auto_options();
  o.num_workers = 4;
  o.prefetch_factor = 2;
  o.max_batch_bytes = 1 << 20;
  o.max_shm_bytes = 4 << 20;
  try {
    Loader loader(std::make_shared<CountingDataset>(16), o);
    FAIL("no error");
  } catch (const OptionError& e) {
    CHECK(e.option() == "max_shm_bytes");
    CHECK_THAT(e.what(), Catch::Contains("4 rings") && Catch::Contains("raise max_shm_bytes"));
  }
}

namespace {

// One window of 1 s and 100 batches, with the loop's wait and the workers' busy and CPU
// time given in seconds.
struct RuleCase {
  const char* what;
  int64_t workers;
  double wait_s, busy_s, cpu_s;
  mpd::AutotuneStep expected;
};

// Feeds an Autotuner windows of 1 s in which the loop waits half the time and each worker is
// busy `busy_share` of it, on a CPU all that time; `batches` per window.
struct WindowFeeder {
  mpd::Autotuner tuner;
  mpd::AutotuneCounters counters;
  int64_t workers;
  double busy_share;
  uint64_t batches = 100;
  double on_cpu = 1;       // of the busy time
  double loop_wait = 0.5;  // of the window

  WindowFeeder(int64_t start_workers, double busy) : tuner(limits()), workers(start_workers),
                                                     busy_share(busy) {
    counters.at = std::chrono::steady_clock::now();
    (void)tuner.after_batch(counters, workers, 2, true);  // the first window starts
  }
  static mpd::AutotuneLimits limits() {
    mpd::AutotuneLimits l;
    l.tune_workers = true;
    l.cpu_budget = 4;
    l.max_workers = 8;
    return l;
  }
  mpd::AutotuneVerdict window() {
    const auto busy = static_cast<uint64_t>(static_cast<double>(workers) * busy_share * 1e9);
    counters.at += std::chrono::seconds(1);
    counters.batches += batches;
    counters.wait_ns += static_cast<uint64_t>(loop_wait * 1e9);
    counters.busy_ns += busy;
    counters.cpu_ns += static_cast<uint64_t>(static_cast<double>(busy) * on_cpu);
    return tuner.after_batch(counters, workers, 2, true);
  }
  // Applies `v`, as the runtime would, and starts the next window.
  void apply(const mpd::AutotuneVerdict& v) {
    tuner.applied(v, 0, counters.batches);
    workers = v.change.workers_after;
    (void)tuner.after_batch(counters, workers, 2, true);
  }
};

}  // namespace

TEST_CASE("autotune: the window rule", "[autotune]") {
  using Step = mpd::AutotuneStep;
  const RuleCase cases[] = {
      {"the loop waits on busy computing workers, a CPU free: add", 1, 0.5, 0.95, 0.9,
       Step::kAddWorker},
      {"computing workers at the budget: no more", 2, 0.5, 1.9, 1.8, Step::kNone},
      {"workers waiting on I/O at the budget: add", 2, 0.5, 1.9, 0.05, Step::kAddWorker},
      {"the loop waits on idle workers: raise prefetch", 2, 0.3, 1.0, 0.9, Step::kRaisePrefetch},
      {"the loop waits on workers mostly idle: try one fewer", 3, 0.5, 0.9, 0.9,
       Step::kRemoveWorker},
      {"workers waiting for the loop: remove", 3, 0.01, 1.0, 0.9, Step::kRemoveWorker},
      {"workers busy enough: keep", 2, 0.01, 1.7, 1.6, Step::kNone},
      {"computing workers above the budget: remove", 3, 0.3, 2.9, 2.0, Step::kRemoveWorker},
  };
  mpd::AutotuneLimits l;
  l.tune_workers = l.tune_prefetch_factor = true;
  l.cpu_budget = 2;
  l.max_workers = 8;
  l.max_prefetch_factor = 4;
  for (const RuleCase& c : cases) {
    mpd::AutotuneWindow w;
    w.wall_ns = 1e9;
    w.batches = 100;
    w.prefetch_factor = 2;
    w.workers_running = c.workers;
    w.wait_ns = c.wait_s * 1e9;
    w.busy_ns = c.busy_s * 1e9;
    w.cpu_ns = c.cpu_s * 1e9;
    INFO(c.what);
    CHECK(mpd::judge_autotune_window(w, l).step == c.expected);
  }
}

TEST_CASE("autotune: an added worker that does not raise the rate is removed, then held",
          "[autotune]") {
  WindowFeeder feed(2, 0.95);
  mpd::AutotuneVerdict v = feed.window();
  REQUIRE(v.step == mpd::AutotuneStep::kAddWorker);
  REQUIRE(v.trial);
  feed.apply(v);
  CHECK(feed.window().step == mpd::AutotuneStep::kNone);  // a trial is judged over two windows
  v = feed.window();  // the same 100 batches a second with 3 workers: no gain
  REQUIRE(v.step == mpd::AutotuneStep::kRemoveWorker);
  CHECK(v.undoes);
  CHECK_THAT(v.reason, Catch::Contains("the added worker did not pay"));
  feed.apply(v);
  for (int i = 0; i < mpd::Autotuner::kHoldWindows; ++i) {
    REQUIRE(feed.window().step == mpd::AutotuneStep::kNone);
  }
  CHECK(feed.window().step == mpd::AutotuneStep::kAddWorker);  // after the hold, it tries again
}

TEST_CASE("autotune: a worker removed on trial that lowers the rate comes back",
          "[autotune]") {
  WindowFeeder feed(3, 0.3);  // the loop waits on workers busy 30 %
  mpd::AutotuneVerdict v = feed.window();
  REQUIRE(v.step == mpd::AutotuneStep::kRemoveWorker);
  REQUIRE(v.trial);
  feed.apply(v);
  feed.batches = 80;  // slower with one fewer
  CHECK(feed.window().step == mpd::AutotuneStep::kNone);
  v = feed.window();
  REQUIRE(v.step == mpd::AutotuneStep::kAddWorker);
  CHECK(v.undoes);
  CHECK_THAT(v.reason, Catch::Contains("the removed worker did not pay (100 -> 80"));
}

namespace {

// A window of 1 s, 100 batches, `workers` busy 95 % and on a CPU `on_cpu` of that, the loop
// waiting `wait` of it.
mpd::AutotuneWindow io_window(int64_t workers, double wait, double on_cpu) {
  mpd::AutotuneWindow w;
  w.wall_ns = 1e9;
  w.batches = 100;
  w.prefetch_factor = 2;
  w.workers_running = workers;
  w.wait_ns = wait * 1e9;
  w.busy_ns = 0.95e9 * static_cast<double>(workers);
  w.cpu_ns = w.busy_ns * on_cpu;
  return w;
}

mpd::AutotuneLimits io_limits(int64_t max_workers) {
  mpd::AutotuneLimits l;
  l.tune_workers = l.tune_prefetch_factor = true;
  l.cpu_budget = 2;
  l.cpu_source = "test";
  l.max_workers = max_workers;
  l.max_workers_reason = "the test's slots";
  l.max_prefetch_factor = 4;
  return l;
}

}  // namespace

TEST_CASE("autotune: workers that wait off the CPU grow by more than one at a time",
          "[autotune]") {
  using Step = mpd::AutotuneStep;
  const mpd::AutotuneLimits l = io_limits(64);
  // Workers on a CPU 17 % of their busy time, the loop waiting all the time: doubling.
  mpd::AutotuneVerdict v = mpd::judge_autotune_window(io_window(2, 1.0, 0.17), l);
  REQUIRE(v.step == Step::kAddWorker);
  CHECK(v.change.workers_after == 4);
  // 8 of them use 1.3 of the 2 CPUs: doubling still, past the old cap of 4 per CPU.
  v = mpd::judge_autotune_window(io_window(8, 1.0, 0.17), l);
  REQUIRE(v.step == Step::kAddWorker);
  CHECK(v.change.workers_after == 16);
  CHECK_THAT(v.reason, Catch::Contains("off the CPU") && Catch::Contains("adding 8"));
  // The loop waits 20 %: a quarter more would feed it.
  v = mpd::judge_autotune_window(io_window(10, 0.2, 0.01), l);
  REQUIRE(v.step == Step::kAddWorker);
  CHECK(v.change.workers_after == 13);
  // Their CPU time fills the CPUs: more would queue for them.
  CHECK(mpd::judge_autotune_window(io_window(16, 1.0, 0.13), l).step == Step::kNone);
  // The slots bound it, and the reason says by what.
  v = mpd::judge_autotune_window(io_window(8, 1.0, 0.17), io_limits(10));
  REQUIRE(v.step == Step::kAddWorker);
  CHECK(v.change.workers_after == 10);
  CHECK_THAT(v.reason, Catch::Contains("10 workers at most (the test's slots)"));
  // Workers queued for a CPU (other processes take them) do not wait on I/O: none added.
  mpd::AutotuneWindow queued = io_window(2, 1.0, 0.2);
  queued.queued_ns = 0.5 * queued.busy_ns;
  CHECK(mpd::judge_autotune_window(queued, l).step == Step::kNone);
  queued = io_window(8, 1.0, 0.17);
  queued.queued_ns = 0.25 * queued.busy_ns;  // waiting on I/O the rest, but the CPUs are full
  CHECK(mpd::judge_autotune_window(queued, l).step == Step::kNone);
  // Computing workers still come one at a time, within the CPUs.
  v = mpd::judge_autotune_window(io_window(1, 1.0, 0.9), l);
  REQUIRE(v.step == Step::kAddWorker);
  CHECK(v.change.workers_after == 2);
  CHECK(mpd::judge_autotune_window(io_window(2, 1.0, 0.9), l).step == Step::kNone);
}

TEST_CASE("autotune: a trial that raises the rate clearly is kept after one window",
          "[autotune]") {
  WindowFeeder feed(2, 0.95);
  feed.on_cpu = 0.1;
  feed.loop_wait = 1.0;
  mpd::AutotuneVerdict v = feed.window();
  REQUIRE(v.step == mpd::AutotuneStep::kAddWorker);
  REQUIRE(v.change.workers_after == 4);
  feed.apply(v);
  feed.batches = 200;  // twice the rate with twice the workers
  v = feed.window();
  REQUIRE(v.step == mpd::AutotuneStep::kAddWorker);  // the next doubling, a window later
  CHECK(v.change.workers_after == 8);
}

TEST_CASE("autotune: added workers that do not raise the rate all go and the count holds",
          "[autotune]") {
  WindowFeeder feed(4, 0.95);
  feed.on_cpu = 0.1;
  feed.loop_wait = 1.0;
  mpd::AutotuneVerdict v = feed.window();
  REQUIRE(v.step == mpd::AutotuneStep::kAddWorker);
  REQUIRE(v.change.workers_after == 8);
  feed.apply(v);
  CHECK(feed.window().step == mpd::AutotuneStep::kNone);
  v = feed.window();  // the same 100 batches a second with 8 workers
  REQUIRE(v.step == mpd::AutotuneStep::kRemoveWorker);
  CHECK(v.undoes);
  CHECK_THAT(v.reason, Catch::Contains("the added workers did not pay"));
  feed.apply(v);
  // The dispatcher drains one worker at a time: the rest go batch by batch.
  for (int batch = 0; batch < 10; ++batch) {
    v = feed.tuner.after_batch(feed.counters, feed.workers, 2, true);
    if (v.step != mpd::AutotuneStep::kRemoveWorker) break;
    CHECK(v.undoes);
    feed.tuner.applied(v, 0, feed.counters.batches);
    feed.workers = v.change.workers_after;
  }
  CHECK(feed.workers == 4);
  for (int i = 0; i < mpd::Autotuner::kHoldWindows; ++i) {
    REQUIRE(feed.window().step == mpd::AutotuneStep::kNone);
  }
}

TEST_CASE("autotune: workers that sleep on I/O grow past 4 per CPU within a few hundred "
          "batches", "[autotune][process]") {
  auto o = auto_options();
  o.batch_size = 16;
  o.persistent_workers = true;
  const machine_load::CpuPressure pressure;
  Loader loader(std::make_shared<SleepyDataset>(16 * 800, std::chrono::microseconds(1500)), o);
  int64_t batches = 0;
  for (Batch& b : loader) {
    (void)b;
    if (++batches == 400) break;
  }
  const LoaderStats s = loader.stats();
  const int64_t most = most_workers(s, s.workers_running);
  INFO(s.autotune.size() << " changes; budget " << budget() << "; slots " << s.workers.size());
  for (const AutotuneChange& c : s.autotune) INFO(c.reason);
  if (most <= std::max<int64_t>(8, budget()) && skipped_when_busy(pressure, s)) return;
  CHECK(most > std::max<int64_t>(8, budget()));
  if (4 * budget() < 64) CHECK(static_cast<int64_t>(s.workers.size()) > 4 * budget());
}

TEST_CASE("autotune: spawned workers come and go too, every index once", "[autotune][process]") {
  const size_t n = 4 * 60;
  auto o = auto_options();
  o.start_method = StartMethod::kSpawn;
  Churn churn(6);
  Loader loader(std::make_shared<CountingDataset>(n), o);
  std::vector<int64_t> got;
  for (Batch& b : loader) {
    for (int64_t index : b.indices()) got.push_back(index);
  }
  CHECK(loader.stats().autotune.size() >= 5);
  std::vector<int64_t> expected(n);
  for (size_t i = 0; i < n; ++i) expected[i] = static_cast<int64_t>(i);
  CHECK(got == expected);
}

}  // namespace test_autotune
