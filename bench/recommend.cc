// recommend(): group rows, pick the smallest worker count within 5 % of the best (within the
// CPU budget), classify.
#include "bench/recommend.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <map>
#include <tuple>

namespace bench {

namespace {

constexpr double kWithin = 0.95;
constexpr double kBusyUtilisation = 0.6;
constexpr double kSlowdown = 1.3;

using GroupKey = std::tuple<std::string, std::string, int64_t, int64_t>;

GroupKey group_of(const RunResult& r) {
  return {r.config.loader, r.config.workload, r.config.batch_size, r.config.prefetch};
}

// The group's rows in the order first seen, each group with 2+ distinct worker counts.
std::vector<std::vector<const RunResult*>> groups(const std::vector<RunResult>& rows) {
  std::map<GroupKey, size_t> index;
  std::vector<std::vector<const RunResult*>> out;
  for (const RunResult& r : rows) {
    auto [it, fresh] = index.emplace(group_of(r), out.size());
    if (fresh) out.emplace_back();
    out[it->second].push_back(&r);
  }
  std::vector<std::vector<const RunResult*>> kept;
  for (auto& g : out) {
    if (g.size() >= 2) kept.push_back(std::move(g));
  }
  return kept;
}

std::string fmt(const char* format, double a, double b = 0, double c = 0) {
  char text[256];
  std::snprintf(text, sizeof text, format, a, b, c);
  return text;
}

void classify(const RunResult& choice, const RunResult& fewest, Recommendation& rec) {
  if (choice.config.workers == 0) {
    rec.bound = "main-loop bound";
    rec.reason = "loading in the main process is within 5 % of the best; workers add nothing";
    return;
  }
  if (choice.utilisation < 0) return;  // no counters for this loader
  const std::string measured =
      fmt("workers busy %.0f %% of the time, %.2f ms per batch each; the loop waits %.2f ms "
          "per batch (p50)", choice.utilisation * 100, choice.busy_ms_per_batch,
          choice.wait_p50_ms);
  const double slowdown = fewest.busy_ms_per_batch > 0 && fewest.config.workers > 0
                              ? choice.busy_ms_per_batch / fewest.busy_ms_per_batch : 1.0;
  if (choice.utilisation < kBusyUtilisation) {
    rec.bound = "IPC-bound";
    rec.reason = measured + ": workers wait for the loop, not the loop for the work";
  } else if (slowdown >= kSlowdown) {
    rec.bound = "memory-bound";
    rec.reason = measured + fmt(": a batch takes %.2fx the busy time it took with %.0f "
                                "worker(s), so workers contend for memory", slowdown,
                                static_cast<double>(fewest.config.workers));
  } else {
    rec.bound = "CPU-bound";
    rec.reason = measured + ": the workers' computing limits throughput, each as fast as alone";
  }
}

// The group's rows within the CPU budget, or all of them when none is (or there is no budget).
std::vector<const RunResult*> within_budget(const std::vector<const RunResult*>& g,
                                            const CpuLimit& limit) {
  std::vector<const RunResult*> kept;
  for (const RunResult* r : g) {
    if (limit.cpus <= 0 || r->config.workers <= limit.cpus) kept.push_back(r);
  }
  return kept.empty() ? g : kept;
}

const RunResult* fastest(const std::vector<const RunResult*>& rows) {
  const RunResult* best = rows.front();
  for (const RunResult* r : rows) {
    if (r->samples_per_s > best->samples_per_s) best = r;
  }
  return best;
}

std::string budget_note(const RunResult& over, const RunResult& best, const CpuLimit& limit) {
  return fmt("%.0f workers measured %.0f %% more samples/s", over.config.workers,
             (over.samples_per_s / best.samples_per_s - 1) * 100) +
         fmt(" than %.0f, but this process may use %.0f CPU", best.config.workers,
             limit.cpus) + (limit.cpus == 1 ? "" : "s") +
         " (" + limit.source + "): in training, workers beyond that take CPU time from the loop";
}

}  // namespace

std::vector<Recommendation> recommend(const std::vector<RunResult>& rows, const CpuLimit& limit) {
  std::vector<Recommendation> recs;
  for (const std::vector<const RunResult*>& g : groups(rows)) {
    const std::vector<const RunResult*> allowed = within_budget(g, limit);
    const RunResult* best = fastest(allowed);
    const RunResult* fewest = g.front();
    for (const RunResult* r : g) {
      if (r->config.workers < fewest->config.workers) fewest = r;
    }
    const RunResult* choice = best;
    for (const RunResult* r : allowed) {
      if (r->samples_per_s >= kWithin * best->samples_per_s &&
          r->config.workers < choice->config.workers) {
        choice = r;
      }
    }
    Recommendation rec;
    const RunResult* over = fastest(g);
    if (over->samples_per_s > best->samples_per_s) {
      rec.budget_note = budget_note(*over, *best, limit);
    }
    std::tie(rec.loader, rec.workload, rec.batch_size, rec.prefetch) = group_of(*choice);
    rec.workers = choice->config.workers;
    rec.samples_per_s = choice->samples_per_s;
    rec.best_workers = best->config.workers;
    rec.best_samples_per_s = best->samples_per_s;
    classify(*choice, *fewest, rec);
    recs.push_back(rec);
  }
  return recs;
}

void print_recommendations(std::ostream& out, const std::vector<Recommendation>& recs) {
  if (recs.empty()) return;
  out << "\nRecommended num_workers (smallest within 5 % of the best samples/s):\n";
  for (const Recommendation& r : recs) {
    char line[512];
    std::snprintf(line, sizeof line,
                  "  %s %s batch=%lld prefetch=%lld: num_workers=%lld (%.1f samples/s; best "
                  "%.1f at %lld)",
                  r.loader.c_str(), r.workload.c_str(), static_cast<long long>(r.batch_size),
                  static_cast<long long>(r.prefetch), static_cast<long long>(r.workers),
                  r.samples_per_s, r.best_samples_per_s, static_cast<long long>(r.best_workers));
    out << line;
    if (!r.bound.empty()) out << "\n    " << r.bound << ": " << r.reason;
    if (!r.budget_note.empty()) out << "\n    " << r.budget_note;
    out << '\n';
  }
}

std::string json_recommendation(const Recommendation& rec, const CpuLimit& limit) {
  nlohmann::ordered_json j;
  j["record"] = "recommendation";
  j["loader"] = rec.loader;
  j["workload"] = rec.workload;
  j["batch_size"] = rec.batch_size;
  j["prefetch"] = rec.prefetch;
  j["workers"] = rec.workers;
  j["samples_per_s"] = rec.samples_per_s;
  j["best_workers"] = rec.best_workers;
  j["best_samples_per_s"] = rec.best_samples_per_s;
  j["bound"] = rec.bound;
  j["reason"] = rec.reason;
  j["budget_note"] = rec.budget_note;
  j["cpu_budget"] = limit.cpus;
  j["cpu_budget_source"] = limit.source;
  return j.dump();
}

void print_scaling(std::ostream& out, const std::vector<RunResult>& rows, int64_t cores) {
  if (cores < 2) return;
  for (const std::vector<const RunResult*>& g : groups(rows)) {
    const RunResult* one = nullptr;
    const RunResult* all = nullptr;
    for (const RunResult* r : g) {
      if (r->config.workers == 1) one = r;
      if (r->config.workers == cores) all = r;
    }
    if (one == nullptr || all == nullptr || one->samples_per_s <= 0) continue;
    char line[256];
    std::snprintf(line, sizeof line,
                  "scaling efficiency %s %s batch=%lld prefetch=%lld: %.2f (%.1f samples/s at "
                  "%lld workers = cores, %.1f at 1)\n",
                  g.front()->config.loader.c_str(), g.front()->config.workload.c_str(),
                  static_cast<long long>(g.front()->config.batch_size),
                  static_cast<long long>(g.front()->config.prefetch),
                  all->samples_per_s / (static_cast<double>(cores) * one->samples_per_s),
                  all->samples_per_s, static_cast<long long>(cores), one->samples_per_s);
    out << line;
  }
}

}  // namespace bench
