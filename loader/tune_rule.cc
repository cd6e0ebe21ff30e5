// choose_num_workers(): the smallest worker count within 5 % of the best (within the CPU
// budget), and why, read from the workers' counters. mploader-bench and tune() both call it.
#include <mploader/tune.h>

#include "loader/epoch_report.h"
#include "util/errors.h"

#include <mploader/errors.h>

#include <cstdio>
#include <stdexcept>

namespace mploader {
namespace {

constexpr double kWithin = 0.95;
constexpr double kBusyUtilisation = 0.6;  // below: workers wait for the loop
constexpr double kSlowdown = 1.3;         // a batch's busy time vs the fewest workers'
constexpr double kLoopWait = 0.1;         // the loop's wait per batch vs its whole batch time

std::string fmt(const char* format, double a, double b = 0, double c = 0) {
  char text[256];
  std::snprintf(text, sizeof text, format, a, b, c);
  return text;
}

void classify(const TunePoint& choice, const TunePoint& fewest, TuneChoice& out) {
  if (choice.workers == 0) {
    out.bound = "main-loop bound";
    out.reason = "loading in the main process is within 5 % of the best; workers add nothing";
    return;
  }
  if (choice.utilisation < 0) return;  // no counters
  const std::string measured =
      fmt("workers busy %.0f %% of the time, %.2f ms per batch each; the loop waits %.2f ms "
          "per batch (p50)", choice.utilisation * 100, choice.busy_ms_per_batch,
          choice.wait_p50_ms);
  const double slowdown = fewest.busy_ms_per_batch > 0 && fewest.workers > 0
                              ? choice.busy_ms_per_batch / fewest.busy_ms_per_batch : 1.0;
  // The loop's whole time per batch: its wait plus whatever it does with the batch.
  const double batch_ms = choice.samples_per_s > 0
                              ? 1000.0 * static_cast<double>(choice.batch_size) /
                                    choice.samples_per_s
                              : 0;
  if (choice.utilisation < kBusyUtilisation && choice.wait_p50_ms <= kLoopWait * batch_ms) {
    out.bound = "loop-bound";
    out.reason = measured + fmt(" of its %.2f ms per batch: the training loop sets the pace, "
                                "and these workers keep it fed", batch_ms);
  } else if (choice.utilisation < kBusyUtilisation) {
    out.bound = "IPC-bound";
    out.reason = measured + ": workers wait for the loop, not the loop for the work";
  } else if (choice.on_cpu >= 0 && choice.on_cpu < detail::kWaitingOnCpuShare) {
    out.bound = "I/O-bound";
    out.reason = measured + fmt(", on a CPU for %.0f %% of it: the workers wait on reads, so "
                                "more of them than CPUs can help", choice.on_cpu * 100);
  } else if (slowdown >= kSlowdown) {
    out.bound = "memory-bound";
    out.reason = measured + fmt(": a batch takes %.2fx the busy time it took with %.0f "
                                "worker(s), so workers contend for memory", slowdown,
                                static_cast<double>(fewest.workers));
  } else {
    out.bound = "CPU-bound";
    out.reason = measured + ": the workers' computing limits throughput, each as fast as alone";
  }
}

// Whether `p`'s workers mostly wait (on I/O) and use at most half the budget's CPU time: then
// more workers than CPUs cost the training loop little. Half, because compute-bound workers
// crowded onto too few CPUs (or throttled by a cgroup quota) are off a CPU for much of their
// busy time too, but their CPU time together comes to the whole budget.
bool waits_within_budget(const TunePoint& p, const TuneCpuBudget& budget) {
  if (p.on_cpu < 0 || p.utilisation < 0) return false;
  if (p.on_cpu >= detail::kWaitingOnCpuShare) return false;
  const double cpus_used = static_cast<double>(p.workers) * p.utilisation * p.on_cpu;
  return cpus_used <= 0.5 * static_cast<double>(budget.cpus);
}

// The points within the CPU budget, or all of them when none is (or there is no budget).
std::vector<const TunePoint*> within_budget(const std::vector<TunePoint>& points,
                                            const TuneCpuBudget& budget) {
  std::vector<const TunePoint*> kept, all;
  for (const TunePoint& p : points) {
    all.push_back(&p);
    if (budget.cpus <= 0 || p.workers <= budget.cpus || waits_within_budget(p, budget)) {
      kept.push_back(&p);
    }
  }
  return kept.empty() ? all : kept;
}

const TunePoint* fastest(const std::vector<const TunePoint*>& points) {
  const TunePoint* best = points.front();
  for (const TunePoint* p : points) {
    if (p->samples_per_s > best->samples_per_s) best = p;
  }
  return best;
}

std::string budget_note(const TunePoint& over, const TunePoint& best,
                        const TuneCpuBudget& budget) {
  return fmt("%.0f workers measured %.0f %% more samples/s", static_cast<double>(over.workers),
             (over.samples_per_s / best.samples_per_s - 1) * 100) +
         fmt(" than %.0f, but this process may use %.0f CPU", static_cast<double>(best.workers),
             static_cast<double>(budget.cpus)) + (budget.cpus == 1 ? "" : "s") + " (" +
         budget.source + "): in training, workers beyond that take CPU time from the loop";
}

void check_group(const std::vector<TunePoint>& points) {
  if (points.size() < 2) {
    throw OptionError("points", detail::message("choose_num_workers",
                                                std::to_string(points.size()) + " point(s)",
                                                "Measure two worker counts or more"));
  }
  for (const TunePoint& p : points) {
    if (p.batch_size != points.front().batch_size || p.prefetch != points.front().prefetch) {
      throw OptionError(
          "points",
          detail::message("choose_num_workers",
                          "the points mix batch sizes or prefetch values (batch " +
                              std::to_string(p.batch_size) + " prefetch " +
                              std::to_string(p.prefetch) + " with batch " +
                              std::to_string(points.front().batch_size) + " prefetch " +
                              std::to_string(points.front().prefetch) + ")",
                          "Give one group at a time"));
    }
  }
}

}  // namespace

TuneChoice choose_num_workers(const std::vector<TunePoint>& points,
                              const TuneCpuBudget& budget) {
  check_group(points);
  const std::vector<const TunePoint*> allowed = within_budget(points, budget);
  const TunePoint* best = fastest(allowed);
  const TunePoint* fewest = &points.front();
  for (const TunePoint& p : points) {
    if (p.workers < fewest->workers) fewest = &p;
  }
  const TunePoint* choice = best;
  for (const TunePoint* p : allowed) {
    if (p->samples_per_s >= kWithin * best->samples_per_s && p->workers < choice->workers) {
      choice = p;
    }
  }
  TuneChoice out;
  std::vector<const TunePoint*> all;
  for (const TunePoint& p : points) all.push_back(&p);
  const TunePoint* over = fastest(all);
  if (over->samples_per_s > best->samples_per_s) {
    out.budget_note = budget_note(*over, *best, budget);
  }
  out.workers = choice->workers;
  out.prefetch = choice->prefetch;
  out.batch_size = choice->batch_size;
  out.samples_per_s = choice->samples_per_s;
  out.best_workers = best->workers;
  out.best_samples_per_s = best->samples_per_s;
  classify(*choice, *fewest, out);
  return out;
}

}  // namespace mploader
