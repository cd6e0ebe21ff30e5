// loader/: the Loader itself: options, epochs and resume, dispatching batches.
//
// Autotuner: num_workers = kAuto and prefetch_factor = kAuto. The runtime feeds it the loop's
// and the workers' counters after each batch; it cuts them into windows (at least 200 ms and
// 4 batches, once every running worker has started) and judges each one:
// - add workers while the loop waits for data and the workers are busy: workers that compute
//   one at a time while a CPU is free; workers that wait off the CPU (I/O) past the CPU budget,
//   as many at once as the loop is short of being fed (up to doubling), while their CPU time
//   leaves some of the CPUs the loop does not use and they seldom queue for a CPU;
// - remove one while the workers wait for the loop: the rest would still be under 85 % busy;
// - while the loop waits for workers that are not busy (the hand-off costs more than the
//   work), try one worker fewer (less contention for the CPUs), else one more batch in flight.
// Steps taken while the loop waits are trials: the rate of the next two windows judges them
// (one, when it rose by kClearGain). Added workers or a raised prefetch that did not raise the
// rate by 5 %, or a removed worker that lowered it by 5 %, are undone, and an undoing step
// holds everything for kHoldWindows windows: the count settles.
//
// Used by one thread (the Loader's).
#pragma once

#include <mploader/stats.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>

namespace mploader::detail {

struct AutotuneLimits {
  bool tune_workers = false;          // num_workers = kAuto
  bool tune_prefetch_factor = false;  // prefetch_factor = kAuto
  int64_t cpu_budget = 1;
  std::string cpu_source;  // where the budget comes from, for the log
  // Worker slots in the pool: descriptors, shared memory and memory (component_settings.h,
  // shm_budget.h); the runtime bounds each growth by memory again as the workers use it.
  int64_t max_workers = 1;
  std::string max_workers_reason;
  int64_t max_prefetch_factor = 1;  // with kAuto, the descriptors each region has
  // StreamingDataset: the split follows the worker count, so changes wait for the next epoch.
  bool between_epochs = false;
  // Forced changes every this many batches (tests of the grow and shrink paths); 0: judged.
  int64_t churn_every = 0;
};

// The counters a window is the difference of; cumulative, as the runtime reads them.
struct AutotuneCounters {
  std::chrono::steady_clock::time_point at;
  uint64_t batches = 0;
  uint64_t wait_ns = 0;  // the loop's, in next()
  uint64_t busy_ns = 0;  // every worker's, summed
  uint64_t cpu_ns = 0;
  // Runnable but waiting for a CPU, every running worker's summed (/proc/<pid>/schedstat);
  // read only when Autotuner::window_due() says so, else not known.
  uint64_t queued_ns = 0;
  bool queued_known = false;
};

enum class AutotuneStep { kNone, kAddWorker, kRemoveWorker, kRaisePrefetch, kLowerPrefetch };

struct AutotuneVerdict {
  AutotuneStep step = AutotuneStep::kNone;
  bool trial = false;  // the next window's rate judges it (AutotuneTrial)
  bool undoes = false;  // it undoes a trial that failed: a hold follows
  std::string reason;
  AutotuneChange change;  // filled for a step; workers_after/prefetch_after as judged
};

// A window's shares, judged alone (the rule without memory).
struct AutotuneWindow {
  double wall_ns = 0, wait_ns = 0, busy_ns = 0, cpu_ns = 0;
  double queued_ns = -1;  // -1: not known
  uint64_t batches = 0;
  int64_t workers_running = 1, prefetch_factor = 1;
  double loop_waiting() const { return wall_ns > 0 ? wait_ns / wall_ns : 0; }
  double workers_busy() const {
    return wall_ns > 0 && workers_running > 0
               ? busy_ns / (wall_ns * static_cast<double>(workers_running))
               : 0;
  }
  double on_cpu() const { return busy_ns > 0 ? std::min(1.0, cpu_ns / busy_ns) : 1; }
  // Of the busy time, waiting for a CPU (0 when not known), and waiting for neither: on I/O.
  double queued() const {
    return busy_ns > 0 && queued_ns > 0 ? std::min(1.0, queued_ns / busy_ns) : 0;
  }
  double on_io() const { return std::max(0.0, 1 - on_cpu() - queued()); }
  double batches_per_s() const { return wall_ns > 0 ? batches * 1e9 / wall_ns : 0; }
};
AutotuneVerdict judge_autotune_window(const AutotuneWindow& w, const AutotuneLimits& limits);

// Forced changes for tests: every `every` batches one worker is added or removed, up to the
// pool's slots (at most kChurnMostWorkers: forking hundreds would only slow the tests) and down
// to one, whatever the counters say. 0 turns it off; read when a Loader is constructed.
inline constexpr int64_t kChurnMostWorkers = 8;
void set_autotune_churn_for_testing(int64_t every);
int64_t autotune_churn_for_testing();

class Autotuner {
 public:
  static constexpr int kHoldWindows = 20;
  static constexpr double kMinGain = 1.05;
  // A trial whose first window shows this gain is kept without waiting for the second: growth
  // by doubling then takes a window per step, not two.
  static constexpr double kClearGain = 1.25;
  static constexpr int kTrialWindows = 2;  // windows a trial's rate is measured over

  explicit Autotuner(AutotuneLimits limits) : limits_(std::move(limits)) {}

  // Whether after_batch() would start or judge a window with these counters: the runtime reads
  // the workers' queued time (a /proc read each) only then.
  bool window_due(const AutotuneCounters& now) const;
  // After each batch: the counters now, the running workers and whether each has started.
  // Returns the step to take now (kNone mostly).
  AutotuneVerdict after_batch(const AutotuneCounters& now, int64_t workers_running,
                              int64_t prefetch_factor, bool all_started);
  // The step was taken (or, between epochs, will be): starts a fresh window and records it.
  // `batch`: LoaderStats::batches now.
  void applied(const AutotuneVerdict& verdict, uint64_t epoch, uint64_t batch);
  const AutotuneLimits& limits() const { return limits_; }
  const std::deque<AutotuneChange>& history() const { return history_; }
  // The worker count a StreamingDataset's next epoch is planned with.
  std::optional<int64_t> pending_workers() const { return pending_workers_; }
  void clear_pending() { pending_workers_.reset(); }
  void set_pending(int64_t workers) { pending_workers_ = workers; }
  // What memory allows, as the runtime last measured it before a growth: for the log lines.
  void set_memory_bound(std::string bound) { memory_bound_ = std::move(bound); }
  const std::string& memory_bound() const { return memory_bound_; }

 private:
  AutotuneVerdict churn(const AutotuneCounters& now, int64_t workers_running,
                        int64_t prefetch_factor);
  // The windows after a trial: its verdict, undoing the trial when the rate says so.
  std::optional<AutotuneVerdict> judge_trial(const AutotuneWindow& w);
  // A window's trial bookkeeping: nullopt to judge the window, else the verdict to return.
  std::optional<AutotuneVerdict> follow_trial(const AutotuneWindow& w);
  // The next removal of an undo of several added workers; nullopt once it is done.
  std::optional<AutotuneVerdict> continue_undo(int64_t workers_running, int64_t prefetch_factor);

  AutotuneLimits limits_;
  std::optional<AutotuneCounters> window_start_;
  AutotuneStep last_step_ = AutotuneStep::kNone;  // of workers
  std::optional<AutotuneStep> trial_;  // a trial applied and not yet judged
  int64_t trial_from_workers_ = 0;     // the count before it
  // Added workers that did not pay go one at a time (the dispatcher drains one at a time).
  std::optional<int64_t> undo_to_;
  double rate_before_trial_ = 0;       // batches/s in the window that decided it
  double rate_judged_ = 0;             // of the window now being judged
  double trial_wall_ns_ = 0;           // the windows since the trial, so far
  uint64_t trial_batches_ = 0;
  int trial_windows_ = 0;
  int hold_ = 0;
  bool churn_growing_ = true;
  uint64_t last_churn_batch_ = 0;
  std::optional<int64_t> pending_workers_;
  std::string memory_bound_ = "memory not measured yet";
  std::deque<AutotuneChange> history_;
};

}  // namespace mploader::detail
