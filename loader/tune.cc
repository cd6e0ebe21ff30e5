// tune(): one Loader per point, timed over all its batches but the first, then the shared
// rule (tune_rule.cc) per batch size and prefetch.
#include <mploader/tune.h>

#include <mploader/dataset.h>
#include <mploader/loader.h>
#include <mploader/stats.h>

#include "util/cpu_budget.h"
#include "util/errors.h"

#include <mploader/errors.h>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <stdexcept>

namespace mploader {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

void check_list(const char* field, const std::vector<int64_t>& values, int64_t min) {
  for (int64_t v : values) {
    if (v < min) {
      throw OptionError(field, detail::message("tune", std::string("TuneOptions::") + field +
                                                           " holds " + std::to_string(v),
                                               "Give values >= " + std::to_string(min)));
    }
  }
}

void check_options(const TuneOptions& t) {
  if (t.workers.empty()) {
    throw OptionError("workers", detail::message("tune", "TuneOptions::workers is empty",
                                                 "Give the worker counts to measure, e.g. "
                                                 "{0, 1, 2, 4}"));
  }
  check_list("workers", t.workers, 0);
  check_list("prefetch", t.prefetch, 1);
  check_list("batch_sizes", t.batch_sizes, 1);
  if (t.batches_per_point < 2) {
    throw OptionError("batches_per_point",
                      detail::message("tune", "TuneOptions::batches_per_point is " +
                                                  std::to_string(t.batches_per_point),
                                      "Give 2 or more (the first batch, which starts the "
                                      "workers, is not timed)"));
  }
}

// The rows of a batch: those of its first tensor.
int64_t rows_of(const Batch& batch) {
  return batch.tensors().empty() ? 0 : batch.tensors().begin()->second.size(0);
}

struct Counters {
  uint64_t busy_ns = 0, cpu_ns = 0, batches = 0;
};

Counters worker_counters(const LoaderStats& stats) {
  Counters c;
  for (const WorkerStats& w : stats.workers) {
    c.busy_ns += w.busy_ns;
    c.cpu_ns += w.cpu_ns;
    c.batches += w.batches;
  }
  return c;
}

// The next batch, moving to the next epoch when one ends.
Batch next_batch(Loader& loader, uint64_t& epoch) {
  for (int empty = 0; empty < 2; ++empty) {
    std::optional<Batch> b = loader.next();
    if (b) return std::move(*b);
    loader.set_epoch(++epoch);
  }
  throw OptionError("batch_sizes",
                    detail::message("tune", "an epoch of batch size " +
                                                std::to_string(loader.options().batch_size) +
                                                " gave no batch: the dataset holds fewer samples "
                                                "than a batch (with drop_last)",
                                    "Give a smaller batch size"));
}

TunePoint measure(const std::function<std::shared_ptr<Dataset>()>& make_dataset,
                  LoaderOptions options, int64_t batches) {
  TunePoint p;
  p.workers = options.num_workers;
  p.prefetch = options.prefetch_factor;
  p.batch_size = options.batch_size;
  Loader loader(make_dataset(), options);
  uint64_t epoch = loader.epoch();
  next_batch(loader, epoch);  // starts the workers: not timed
  const Counters before = worker_counters(loader.stats());
  std::vector<double> waits;
  int64_t samples = 0;
  const Clock::time_point start = Clock::now();
  for (int64_t i = 1; i < batches; ++i) {
    const Clock::time_point asked = Clock::now();
    samples += rows_of(next_batch(loader, epoch));
    waits.push_back(seconds_between(asked, Clock::now()) * 1e3);
  }
  const double loop_s = seconds_between(start, Clock::now());
  const Counters after = worker_counters(loader.stats());
  p.batches = batches - 1;
  p.samples_per_s = loop_s > 0 ? static_cast<double>(samples) / loop_s : 0;
  std::nth_element(waits.begin(), waits.begin() + waits.size() / 2, waits.end());
  p.wait_p50_ms = waits[waits.size() / 2];
  if (p.workers > 0 && loop_s > 0) {
    const auto busy = static_cast<double>(after.busy_ns - before.busy_ns);
    p.utilisation = busy / 1e9 / (loop_s * static_cast<double>(p.workers));
    const uint64_t built = after.batches - before.batches;
    if (built > 0) p.busy_ms_per_batch = busy / 1e6 / static_cast<double>(built);
    const auto cpu = static_cast<double>(after.cpu_ns - std::min(after.cpu_ns, before.cpu_ns));
    if (busy > 0) p.on_cpu = std::min(1.0, cpu / busy);
  }
  return p;
}

}  // namespace

namespace {

std::string describe(const TunePoint& p) {
  return "workers=" + std::to_string(p.workers) + " prefetch=" + std::to_string(p.prefetch) +
         " batch=" + std::to_string(p.batch_size);
}

// The points, batch size x prefetch x workers, with the base options' values where a list is
// empty.
std::vector<TunePoint> plan(const LoaderOptions& base, const TuneOptions& t) {
  const std::vector<int64_t> sizes =
      t.batch_sizes.empty() ? std::vector<int64_t>{base.batch_size} : t.batch_sizes;
  const std::vector<int64_t> prefetch =
      t.prefetch.empty() ? std::vector<int64_t>{base.prefetch_factor} : t.prefetch;
  std::vector<TunePoint> points;
  for (int64_t b : sizes) {
    for (int64_t f : prefetch) {
      for (int64_t w : t.workers) {
        TunePoint p;
        p.workers = w;
        p.prefetch = f;
        p.batch_size = b;
        points.push_back(p);
      }
    }
  }
  return points;
}

// A choice for each batch size and prefetch with two or more points, in the order measured.
std::vector<TuneChoice> choose_per_group(const std::vector<TunePoint>& table,
                                         const TuneCpuBudget& budget) {
  std::vector<std::vector<TunePoint>> groups;
  for (const TunePoint& p : table) {
    auto same = [&](const std::vector<TunePoint>& g) {
      return g.front().batch_size == p.batch_size && g.front().prefetch == p.prefetch;
    };
    auto it = std::find_if(groups.begin(), groups.end(), same);
    if (it == groups.end()) {
      groups.push_back({p});
    } else {
      it->push_back(p);
    }
  }
  std::vector<TuneChoice> choices;
  for (const std::vector<TunePoint>& g : groups) {
    if (g.size() >= 2) choices.push_back(choose_num_workers(g, budget));
  }
  return choices;
}

TuneChoice only_point(const TunePoint& p, bool budget_ran_out) {
  TuneChoice c;
  c.workers = c.best_workers = p.workers;
  c.prefetch = p.prefetch;
  c.batch_size = p.batch_size;
  c.samples_per_s = c.best_samples_per_s = p.samples_per_s;
  c.reason = budget_ran_out ? "the only point measured: raise TuneOptions::time_budget to "
                              "compare worker counts"
                            : "the only point asked for: give TuneOptions::workers two counts "
                              "or more to compare them";
  return c;
}

}  // namespace

TuneResult tune(const std::function<std::shared_ptr<Dataset>()>& make_dataset,
                const LoaderOptions& base, const TuneOptions& t) {
  check_options(t);
  if (!make_dataset) {
    throw OptionError("make_dataset", detail::message("tune", "make_dataset is empty",
                                                      "Pass a function that makes the dataset"));
  }
  TuneResult result;
  const detail::CpuBudget cpus = detail::cpu_budget();
  result.cpu_budget = TuneCpuBudget{cpus.cpus(), cpus.source()};
  const Clock::time_point start = Clock::now();
  for (const TunePoint& point : plan(base, t)) {
    if (!result.table.empty() && Clock::now() - start >= t.time_budget) {
      result.skipped.push_back(describe(point));
      continue;
    }
    LoaderOptions options = base;
    options.num_workers = point.workers;
    options.prefetch_factor = point.prefetch;
    options.batch_size = point.batch_size;
    options.persistent_workers = true;  // an epoch boundary inside a point costs no restart
    result.table.push_back(measure(make_dataset, options, t.batches_per_point));
  }
  result.choices = choose_per_group(result.table, result.cpu_budget);
  result.recommendation = only_point(result.table.front(), !result.skipped.empty());
  for (const TuneChoice& c : result.choices) {
    if (&c == &result.choices.front() || c.samples_per_s > result.recommendation.samples_per_s) {
      result.recommendation = c;
    }
  }
  result.options = base;
  result.options.num_workers = result.recommendation.workers;
  result.options.prefetch_factor = result.recommendation.prefetch;
  result.options.batch_size = result.recommendation.batch_size;
  return result;
}

std::string TuneResult::summary() const {
  std::ostringstream out;
  char line[160];
  for (const TunePoint& p : table) {
    std::snprintf(line, sizeof line, "  %-34s %10.1f samples/s  util %5.2f  wait p50 %.2f ms\n",
                  describe(p).c_str(), p.samples_per_s, p.utilisation, p.wait_p50_ms);
    out << line;
  }
  const TuneChoice& r = recommendation;
  out << "  recommended: num_workers=" << r.workers << " prefetch_factor=" << r.prefetch
      << " batch_size=" << r.batch_size;
  std::snprintf(line, sizeof line, " (%.1f samples/s; best %.1f at %lld workers)",
                r.samples_per_s, r.best_samples_per_s, static_cast<long long>(r.best_workers));
  out << line;
  if (!r.bound.empty()) out << "\n  " << r.bound << ": " << r.reason;
  if (!r.budget_note.empty()) out << "\n  " << r.budget_note;
  if (!skipped.empty()) {
    out << "\n  not measured (time budget): " << skipped.size() << " points, from "
        << skipped.front();
  }
  return out.str();
}

}  // namespace mploader
