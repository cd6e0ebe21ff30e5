#include "loader/autotune.h"

#include "loader/epoch_report.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>

namespace mploader::detail {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kMinWindow = std::chrono::milliseconds(200);
constexpr auto kLongWindow = std::chrono::seconds(3);  // judged with fewer batches after this
constexpr uint64_t kMinWindowBatches = 4;
constexpr double kLoopWaits = 0.10;      // the loop waited for data this share of the window
constexpr double kLoopFed = 0.05;        // below this the loop is fed
constexpr double kWorkersBusy = 0.80;    // the workers are busy
constexpr double kRemainingBusy = 0.85;  // one fewer would still be below this
// Workers that wait off the CPU grow while their CPU time is under this share of the CPUs the
// loop leaves them: the rest goes to handing batches over (the loop's process, the kernel's
// wake-ups), and past it more workers would queue for the CPUs rather than wait on I/O.
constexpr double kCpusFull = 0.80;
// Workers queued for a CPU this share of their busy time find the CPUs full, whatever their own
// CPU time: other processes take them. No more are added for I/O then.
constexpr double kQueuedFull = 0.20;

std::atomic<int64_t> churn_for_testing{0};

std::string percent(double share) {
  char text[16];
  std::snprintf(text, sizeof text, "%.0f%%", share * 100);
  return text;
}

std::string numbers_of(const AutotuneWindow& w) {
  char text[200];
  std::snprintf(text, sizeof text, "in the last %.2f s (%llu batches, %.0f batches/s) ",
                w.wall_ns / 1e9, static_cast<unsigned long long>(w.batches), w.batches_per_s());
  return text + std::string("the loop waited ") + percent(w.loop_waiting()) + ", the " +
         std::to_string(w.workers_running) + " workers were busy " + percent(w.workers_busy()) +
         ", on a CPU " + percent(w.on_cpu()) + " of that" +
         (w.queued_ns >= 0 ? ", queued for one " + percent(w.queued()) : std::string());
}

// `count`: the workers a kAddWorker step adds.
AutotuneVerdict verdict(AutotuneStep step, const AutotuneWindow& w, const AutotuneLimits& l,
                        std::string why, int64_t count = 1) {
  AutotuneVerdict v;
  v.step = step;
  v.reason = std::move(why);
  AutotuneChange& c = v.change;
  c.workers_before = c.workers_after = w.workers_running;
  c.prefetch_before = c.prefetch_after = w.prefetch_factor;
  if (step == AutotuneStep::kAddWorker) c.workers_after += count;
  if (step == AutotuneStep::kRemoveWorker) --c.workers_after;
  if (step == AutotuneStep::kRaisePrefetch) ++c.prefetch_after;
  if (step == AutotuneStep::kLowerPrefetch) --c.prefetch_after;
  c.loop_waiting = w.loop_waiting();
  c.workers_busy = w.workers_busy();
  c.on_cpu = w.on_cpu();
  c.cpu_budget = l.cpu_budget;
  c.max_workers = l.max_workers;
  c.reason = numbers_of(w) + ": " + v.reason;
  return v;
}

struct Growth {
  int64_t add = 0;
  std::string why;
};

// Workers that wait off the CPU: as many more as the loop is short of being fed (waiting a
// share f of the time, it could take 1 / (1 - f) times the batches), up to doubling, while
// their CPU time stays under kCpusFull of the CPUs the loop's own thread leaves them.
Growth io_growth(const AutotuneWindow& w, const AutotuneLimits& l) {
  const double cpus_used = w.wall_ns > 0 ? w.cpu_ns / w.wall_ns : 0;
  const double cpus_left = static_cast<double>(l.cpu_budget) - (1 - w.loop_waiting());
  char numbers[160];
  std::snprintf(numbers, sizeof numbers, "their CPU time is %.2f of the %.2f CPU(s) the loop "
                "leaves them (budget %lld, %s)", cpus_used, cpus_left,
                static_cast<long long>(l.cpu_budget), l.cpu_source.c_str());
  if (cpus_used >= kCpusFull * cpus_left || w.queued() >= kQueuedFull) return {};
  const double wanted = std::min(2.0, 1 / std::max(0.5, 1 - w.loop_waiting()));
  const auto more =
      static_cast<int64_t>(std::ceil(static_cast<double>(w.workers_running) * (wanted - 1)));
  return {std::max<int64_t>(1, more),
          "they wait off the CPU (I/O), and " + std::string(numbers)};
}

// How many workers to add: computing ones one at a time within the CPU budget, waiting ones
// by io_growth; never past the pool's slots.
Growth room_to_grow(const AutotuneWindow& w, const AutotuneLimits& l) {
  const int64_t slots_left = l.max_workers - w.workers_running;
  if (slots_left <= 0) return {};
  Growth g;
  if (w.on_io() > kWaitingOnCpuShare) g = io_growth(w, l);
  if (g.add == 0 && w.workers_running + 1 <= l.cpu_budget) g = {1, "a CPU is free"};
  if (g.add > slots_left) {
    g.add = slots_left;
    g.why += "; " + std::to_string(l.max_workers) + " workers at most (" + l.max_workers_reason +
             ")";
  }
  return g;
}

}  // namespace

void set_autotune_churn_for_testing(int64_t every) { churn_for_testing.store(every); }
int64_t autotune_churn_for_testing() { return churn_for_testing.load(); }

AutotuneVerdict judge_autotune_window(const AutotuneWindow& w, const AutotuneLimits& l) {
  const bool waits = w.loop_waiting() > kLoopWaits;
  const bool busy = w.workers_busy() > kWorkersBusy;
  const double one_fewer = w.workers_running > 1
                               ? w.workers_busy() * static_cast<double>(w.workers_running) /
                                     static_cast<double>(w.workers_running - 1)
                               : 2;
  if (l.tune_workers && waits && busy) {
    const Growth g = room_to_grow(w, l);
    if (g.add > 0) {
      AutotuneVerdict v = verdict(AutotuneStep::kAddWorker, w, l,
                                  "the loop waits on busy workers: " + g.why + ": adding " +
                                      (g.add == 1 ? "one" : std::to_string(g.add)),
                                  g.add);
      v.trial = true;
      return v;
    }
  }
  if (waits && !busy) {
    AutotuneVerdict v;
    if (l.tune_workers && one_fewer < 1.0) {  // the rest could do the work, if no faster
      v = verdict(AutotuneStep::kRemoveWorker, w, l,
                  "the loop waits on workers that are not busy (the hand-off costs more than "
                  "the work): trying one fewer");
    } else if (l.tune_prefetch_factor && w.prefetch_factor < l.max_prefetch_factor) {
      v = verdict(AutotuneStep::kRaisePrefetch, w, l,
                  "the loop waits on workers that are not busy: trying one more batch in "
                  "flight each");
    }
    v.trial = v.step != AutotuneStep::kNone;
    if (v.trial) return v;
  }
  if (l.tune_workers && w.workers_running > l.cpu_budget && w.on_cpu() >= kWaitingOnCpuShare) {
    return verdict(AutotuneStep::kRemoveWorker, w, l,
                   "the workers compute, and there are more of them than the " +
                       std::to_string(l.cpu_budget) + " CPU(s) (" + l.cpu_source +
                       "): removing one");
  }
  if (l.tune_workers && w.workers_running > 1 && w.loop_waiting() < kLoopFed &&
      one_fewer < kRemainingBusy) {
    return verdict(AutotuneStep::kRemoveWorker, w, l,
                   "the workers wait for the loop, and one fewer would be busy " +
                       percent(one_fewer) + ": removing one");
  }
  return {};
}

bool Autotuner::window_due(const AutotuneCounters& now) const {
  if (limits_.churn_every > 0) return false;
  if (!window_start_) return true;
  const auto elapsed = now.at - window_start_->at;
  const uint64_t batches = now.batches - window_start_->batches;
  return (elapsed >= kMinWindow && batches >= kMinWindowBatches) ||
         (elapsed >= kLongWindow && batches >= 1);
}

AutotuneVerdict Autotuner::after_batch(const AutotuneCounters& now, int64_t workers_running,
                                       int64_t prefetch_factor, bool all_started) {
  if (limits_.between_epochs && pending_workers_ && !limits_.tune_prefetch_factor) return {};
  if (limits_.churn_every > 0) return churn(now, workers_running, prefetch_factor);
  if (std::optional<AutotuneVerdict> undo = continue_undo(workers_running, prefetch_factor)) {
    return *undo;
  }
  if (!all_started) {  // a starting worker is idle, which says nothing of the count
    window_start_.reset();
    return {};
  }
  if (!window_start_) {
    window_start_ = now;
    return {};
  }
  const AutotuneCounters& from = *window_start_;
  const auto elapsed = now.at - from.at;
  const uint64_t batches = now.batches - from.batches;
  const bool long_enough = elapsed >= kMinWindow && batches >= kMinWindowBatches;
  if (!long_enough && !(elapsed >= kLongWindow && batches >= 1)) return {};
  AutotuneWindow w;
  w.wall_ns = static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                      elapsed).count());
  w.wait_ns = static_cast<double>(now.wait_ns - from.wait_ns);
  // A process started in a slot counts its CPU time from zero again.
  w.busy_ns = static_cast<double>(now.busy_ns >= from.busy_ns ? now.busy_ns - from.busy_ns : 0);
  w.cpu_ns = static_cast<double>(now.cpu_ns >= from.cpu_ns ? now.cpu_ns - from.cpu_ns : 0);
  if (now.queued_known && from.queued_known && now.queued_ns >= from.queued_ns) {
    w.queued_ns = static_cast<double>(now.queued_ns - from.queued_ns);
  }
  w.batches = batches;
  w.workers_running = workers_running;
  w.prefetch_factor = prefetch_factor;
  window_start_ = now;
  if (hold_ > 0) {
    --hold_;
    return {};
  }
  rate_judged_ = w.batches_per_s();
  if (std::optional<AutotuneVerdict> v = follow_trial(w)) return *v;
  AutotuneVerdict v = judge_autotune_window(w, limits_);
  if (limits_.between_epochs && pending_workers_ &&
      (v.step == AutotuneStep::kAddWorker || v.step == AutotuneStep::kRemoveWorker)) {
    return {};  // this epoch's change is decided; the next epoch is judged afresh
  }
  return v;
}

// Judged over kTrialWindows windows together: one window's rate is too noisy to undo by. A
// first window kClearGain faster than before needs no second.
std::optional<AutotuneVerdict> Autotuner::follow_trial(const AutotuneWindow& w) {
  if (!trial_) return std::nullopt;
  trial_wall_ns_ += w.wall_ns;
  trial_batches_ += w.batches;
  const bool clear = *trial_ != AutotuneStep::kRemoveWorker &&
                     w.batches_per_s() >= kClearGain * rate_before_trial_;
  if (clear) {
    trial_.reset();
    return std::nullopt;
  }
  if (++trial_windows_ < kTrialWindows) return AutotuneVerdict{};
  AutotuneWindow whole = w;
  whole.wall_ns = trial_wall_ns_;
  whole.batches = trial_batches_;
  return judge_trial(whole);
}

std::optional<AutotuneVerdict> Autotuner::continue_undo(int64_t workers_running,
                                                       int64_t prefetch_factor) {
  if (!undo_to_) return std::nullopt;
  if (workers_running <= *undo_to_) {
    undo_to_.reset();
    return std::nullopt;
  }
  AutotuneWindow w;
  w.workers_running = workers_running;
  w.prefetch_factor = prefetch_factor;
  AutotuneVerdict v = verdict(AutotuneStep::kRemoveWorker, w, limits_,
                              "the added workers did not pay: removing them, one at a time, "
                              "down to " + std::to_string(*undo_to_));
  v.undoes = true;
  return v;
}

// A trial that did not pay is undone: an added worker or a raised prefetch without a gain of
// kMinGain while the loop still waits, a removed worker that cost as much.
std::optional<AutotuneVerdict> Autotuner::judge_trial(const AutotuneWindow& w) {
  const AutotuneStep step = *trial_;
  trial_.reset();
  const double before = rate_before_trial_, now = w.batches_per_s();
  const bool still_waits = w.loop_waiting() > kLoopWaits;
  AutotuneStep undo = AutotuneStep::kNone;
  std::string what;
  if (step == AutotuneStep::kAddWorker && still_waits && w.workers_running > 1 &&
      now < kMinGain * before) {
    undo = AutotuneStep::kRemoveWorker;
    what = w.workers_running - trial_from_workers_ > 1 ? "the added workers" : "the added worker";
    if (w.workers_running - 1 > trial_from_workers_) undo_to_ = trial_from_workers_;
  } else if (step == AutotuneStep::kRaisePrefetch && still_waits && w.prefetch_factor > 1 &&
             now < kMinGain * before) {
    undo = AutotuneStep::kLowerPrefetch, what = "the raised prefetch";
  } else if (step == AutotuneStep::kRemoveWorker && now * kMinGain < before) {
    undo = AutotuneStep::kAddWorker, what = "the removed worker";
  }
  if (undo == AutotuneStep::kNone) return std::nullopt;
  char why[200];
  std::snprintf(why, sizeof why, "%s did not pay (%.0f -> %.0f batches/s): undoing it",
                what.c_str(), before, now);
  AutotuneVerdict v = verdict(undo, w, limits_, why);
  v.undoes = true;
  return v;
}

AutotuneVerdict Autotuner::churn(const AutotuneCounters& now, int64_t workers_running,
                                 int64_t prefetch_factor) {
  if (limits_.between_epochs && pending_workers_) return {};  // one change per epoch
  if (now.batches < last_churn_batch_ + static_cast<uint64_t>(limits_.churn_every)) return {};
  last_churn_batch_ = now.batches;
  if (workers_running >= std::min(limits_.max_workers, kChurnMostWorkers)) {
    churn_growing_ = false;
  }
  if (workers_running <= 1) churn_growing_ = true;
  AutotuneWindow w;
  w.workers_running = workers_running;
  w.prefetch_factor = prefetch_factor;
  return verdict(churn_growing_ ? AutotuneStep::kAddWorker : AutotuneStep::kRemoveWorker, w,
                 limits_, "forced for a test");
}

void Autotuner::applied(const AutotuneVerdict& v, uint64_t epoch, uint64_t batch) {
  const bool workers = v.step == AutotuneStep::kAddWorker ||
                       v.step == AutotuneStep::kRemoveWorker;
  const bool reverses = (v.step == AutotuneStep::kAddWorker &&
                         last_step_ == AutotuneStep::kRemoveWorker) ||
                        (v.step == AutotuneStep::kRemoveWorker &&
                         last_step_ == AutotuneStep::kAddWorker);
  if (limits_.churn_every == 0 && (v.undoes || reverses)) hold_ = kHoldWindows;
  if (workers) last_step_ = v.step;
  trial_.reset();
  if (v.trial && !(workers && limits_.between_epochs)) {  // judged once it took effect
    trial_ = v.step;
    trial_from_workers_ = v.change.workers_before;
    rate_before_trial_ = rate_judged_;
    trial_wall_ns_ = 0;
    trial_batches_ = 0;
    trial_windows_ = 0;
  }
  window_start_.reset();
  AutotuneChange c = v.change;
  c.epoch = epoch;
  c.batch = batch;
  history_.push_back(std::move(c));
  if (history_.size() > kMaxListedAutotuneChanges) history_.pop_front();
}

}  // namespace mploader::detail
