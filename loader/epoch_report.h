// loader/: the Loader itself: options, epochs and resume, dispatching batches.
//
// EpochLedger: the Loader's epochs as LoaderStats::epochs lists them. It marks the counters at
// each epoch's start and subtracts them at its end, judges what held the epoch back
// (Bottleneck) and words the end-of-epoch line. The same numbers are what a tuner reads.
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

// Busy workers on a CPU for less than this share of their busy time are waiting (on reads, a
// lock), not computing: the epoch judgement and the tuning rule (tune_rule.cc) both use it.
inline constexpr double kWaitingOnCpuShare = 0.5;

// What the judgement needs to know of the loader.
struct EpochContext {
  int64_t workers_running = 0;
  int64_t prefetch_factor = 0;
  bool in_order = true;
  int64_t cpu_budget = 0;            // 0: unknown
  std::string cpu_budget_source;     // "its affinity mask", "the cgroup CPU quota of ..."
};

// Fills e.bottleneck and e.summary from e's counters.
void judge_epoch(EpochStats& e, const EpochContext& context);

class EpochLedger {
 public:
  using Clock = std::chrono::steady_clock;

  explicit EpochLedger(EpochContext context) : context_(std::move(context)) {}

  // An epoch starts, with the loader's counters at `totals`; a running one is kept unfinished.
  void start(uint64_t epoch, const LoaderStats& totals);
  // The running epoch ended with the counters at `totals`: returns it judged (nullopt when none
  // runs).
  std::optional<EpochStats> finish(const LoaderStats& totals);
  // The autotuner changed the running workers: the epoch is judged against this many.
  void set_workers_running(int64_t workers) { context_.workers_running = workers; }
  // Appends the kept epochs and the running one (measured against `s`'s counters) to s.epochs.
  void fill(LoaderStats& s) const;

 private:
  // The counters an epoch is the difference of, summed over workers.
  struct Totals {
    Clock::time_point at;
    uint64_t batches = 0, wait_ns = 0, head_of_line_ns = 0, busy_ns = 0, cpu_ns = 0;
    StageTimes stages;
  };
  static Totals totals_of(const LoaderStats& s, Clock::time_point at);
  EpochStats measure(const Totals& from, const Totals& to) const;
  void keep(EpochStats e);

  EpochContext context_;
  std::optional<uint64_t> running_;
  Totals start_;
  std::deque<EpochStats> kept_;
};

}  // namespace mploader::detail
