/// @file
/// tune(): num_workers (and prefetch_factor) measured on the real dataset, on this machine, in
/// a few seconds, for a training program to choose its Loader's settings at start-up. The
/// choice follows mploader-bench's rule, which is this one (docs/tuning-num-workers.md):
///
///   mploader::TuneResult t = mploader::tune([] { return std::make_shared<MyData>(dir); },
///                                           options);
///   std::cout << t.summary() << '\n';
///   mploader::Loader loader(std::make_shared<MyData>(dir), t.options);
#pragma once

#include <mploader/options.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mploader {

class Dataset;

/// What tune() measures.
struct TuneOptions {
  std::vector<int64_t> workers{0, 1, 2, 4};  ///< Worker counts, each >= 0.
  /// prefetch_factor values; empty: the base options' only.
  std::vector<int64_t> prefetch;
  /// Batch sizes; empty: the base options' only. A batch size changes training, so it is
  /// measured only when asked.
  std::vector<int64_t> batch_sizes;
  /// Batches each point takes (>= 2): the first, which includes starting the workers, is not
  /// timed. An epoch shorter than this is taken again.
  int64_t batches_per_point = 30;
  /// No point starts after this much time; the points left are listed in TuneResult::skipped.
  /// The first point always runs.
  std::chrono::milliseconds time_budget{std::chrono::seconds(20)};
};

/// One measured point.
struct TunePoint {
  int64_t workers = 0;       ///< LoaderOptions::num_workers.
  int64_t prefetch = 0;      ///< LoaderOptions::prefetch_factor.
  int64_t batch_size = 0;    ///< LoaderOptions::batch_size.
  int64_t batches = 0;       ///< Timed: all but the first.
  double samples_per_s = 0;  ///< Over the timed batches.
  /// The workers' busy time over workers x the loop's time; -1 without worker counters (0
  /// workers, or a loader that has none).
  double utilisation = -1;
  double busy_ms_per_batch = -1;  ///< A worker's busy time per batch; -1 as above.
  double wait_p50_ms = 0;         ///< The loop's median wait for a batch.
  /// The share of the workers' busy time they spent on a CPU (WorkerStats::cpu_ns over
  /// busy_ns); low when they wait on reads. -1 as above.
  double on_cpu = -1;
};

/// The choice for one batch size and prefetch_factor, from two or more worker counts.
struct TuneChoice {
  int64_t workers = 0;  ///< The smallest count within 5 % of the best samples/s.
  int64_t prefetch = 0;    ///< The group's prefetch_factor.
  int64_t batch_size = 0;  ///< The group's batch size.
  double samples_per_s = 0;  ///< At `workers`.
  int64_t best_workers = 0;  ///< The fastest count within the CPU budget.
  double best_samples_per_s = 0;  ///< At `best_workers`.
  /// "CPU-bound", "I/O-bound", "memory-bound", "IPC-bound", "loop-bound", "main-loop bound",
  /// or empty
  /// without counters.
  std::string bound;
  std::string reason;       ///< The measurements behind `bound`, one line.
  std::string budget_note;  ///< When a count above the CPU budget measured faster.
};

/// The CPUs workers may use (0: no limit) and what sets that, for the choice's note.
struct TuneCpuBudget {
  int64_t cpus = 0;    ///< 0: no limit.
  std::string source;  ///< E.g. "the cgroup CPU quota of 2.00 CPUs (/sys/fs/cgroup/cpu.max)".
};

/// The rule, shared with mploader-bench: among the points of one batch size and prefetch
/// within the CPU budget (all of them when none is), the best samples/s. A point with more
/// workers than the budget counts as within it when its workers wait on I/O (on a CPU for
/// less than half their busy time) and their CPU time fits in half the budget; the choice is the
/// smallest worker count within 5 % of it, with its reason from the worker counters. Throws
/// OptionError("points", ...) with fewer than two points, or points of different batch sizes or
/// prefetch values.
TuneChoice choose_num_workers(const std::vector<TunePoint>& points,
                              const TuneCpuBudget& budget = {});

/// What tune() found.
struct TuneResult {
  std::vector<TunePoint> table;    ///< Every point measured, in the order run.
  std::vector<TuneChoice> choices; ///< One per batch size and prefetch with 2+ points.
  /// The choice with the most samples/s, or the only point when only one ran.
  TuneChoice recommendation;
  TuneCpuBudget cpu_budget;          ///< The budget the choices kept to.
  std::vector<std::string> skipped;  ///< Points the time budget left out ("workers=4 ...").
  LoaderOptions options;  ///< The base options with the recommendation's settings.
  /// The table, the recommendation and its reason, as lines of text.
  std::string summary() const;
};

/// Measures a Loader over make_dataset() at each point of `tune` (batch sizes x prefetch x
/// workers; the rest of the options are `base`'s), one Loader at a time, and recommends.
/// make_dataset is called once per point. Throws OptionError for bad TuneOptions, naming
/// the field; the Loader's own errors pass through.
TuneResult tune(const std::function<std::shared_ptr<Dataset>()>& make_dataset,
                const LoaderOptions& base, const TuneOptions& tune = {});

}  // namespace mploader
