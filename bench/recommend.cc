// recommend(): group rows, and apply mploader's rule to each group.
#include "bench/recommend.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <map>
#include <tuple>

namespace bench {

namespace {

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

mploader::TunePoint point_of(const RunResult& r) {
  mploader::TunePoint p;
  p.workers = r.config.workers;
  p.prefetch = r.config.prefetch;
  p.batch_size = r.config.batch_size;
  p.batches = r.batches;
  p.samples_per_s = r.samples_per_s;
  p.utilisation = r.utilisation;
  p.busy_ms_per_batch = r.busy_ms_per_batch;
  p.wait_p50_ms = r.wait_p50_ms;
  p.on_cpu = r.on_cpu;
  return p;
}

}  // namespace

// The rule is the library's (mploader::choose_num_workers, loader/tune_rule.cc), which
// mploader::tune() applies too.
std::vector<Recommendation> recommend(const std::vector<RunResult>& rows, const CpuLimit& limit) {
  std::vector<Recommendation> recs;
  for (const std::vector<const RunResult*>& g : groups(rows)) {
    std::vector<mploader::TunePoint> points;
    for (const RunResult* r : g) points.push_back(point_of(*r));
    recs.push_back(Recommendation{mploader::choose_num_workers(points, limit),
                                  g.front()->config.loader, g.front()->config.workload});
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
