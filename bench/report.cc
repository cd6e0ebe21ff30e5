// JSON lines, the readable table, and the mploader-to-others ratios.
#include "bench/report.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <stdexcept>
#include <map>
#include <tuple>
#include <utility>

namespace bench {
namespace {

// RunResult::stage_ms_per_batch's stages, in order, as JSON and the table name them.
constexpr std::array<const char*, 5> kStageNames = {"read", "decode", "transform", "write",
                                                    "hand-off"};

// A row's workers and prefetch as the tables show them: "auto" where mploader chose.
std::string workers_text(const RunResult& r) {
  return r.config.workers < 0 ? "auto" : std::to_string(r.config.workers);
}
std::string prefetch_text(const RunResult& r) {
  return r.config.loader == "mploader-auto" ? "auto" : std::to_string(r.config.prefetch);
}

}  // namespace

std::string json_line(const RunResult& r) {
  nlohmann::ordered_json j;
  j["loader"] = r.config.loader;
  j["workload"] = r.config.workload;
  j["workers"] = r.config.workers;
  j["batch_size"] = r.config.batch_size;
  j["prefetch"] = r.config.prefetch;
  j["samples_per_s"] = r.samples_per_s;
  j["mb_per_s"] = r.mb_per_s;
  j["first_batch_s"] = r.first_batch_s;
  j["batches"] = r.batches;
  j["wall_s"] = r.wall_s;
  j["samples"] = r.samples;
  j["teardown_s"] = r.teardown_s;
  j["dataset_size"] = r.dataset_size;
  if (r.config.workload == "synthetic") j["sample_shape"] = r.config.sample_shape;
  if (r.config.workload == "stream") {
    j["context"] = r.config.context;
    j["tokens_per_s"] = r.tokens_per_s();
  }
  if (r.config.loader == "mploader") j["start"] = r.config.start;
  if (!r.checksum.empty()) j["checksum"] = r.checksum;
  j["wait_p50_ms"] = r.wait_p50_ms;
  j["wait_p99_ms"] = r.wait_p99_ms;
  j["utilisation"] = r.utilisation;
  j["busy_ms_per_batch"] = r.busy_ms_per_batch;
  j["head_of_line_s"] = r.head_of_line_s;
  if (!r.stage_ms_per_batch.empty()) {
    nlohmann::ordered_json stages;
    for (size_t k = 0; k < r.stage_ms_per_batch.size() && k < kStageNames.size(); ++k) {
      stages[kStageNames[k]] = r.stage_ms_per_batch[k];
    }
    j["stage_ms_per_batch"] = stages;
    j["on_cpu"] = r.on_cpu;
  }
  j["corrupt"] = r.corrupt;
  j["corrupt_examples"] = r.corrupt_examples;
  if (r.epochs >= 0) {
    j["epochs"] = r.epochs;
    j["memory_growth_warnings"] = r.memory_growth_warnings;
    j["worker_private_growth_mb"] = r.worker_private_growth_mb;
  }
  j["second_half_samples_per_s"] = r.second_half_samples_per_s;
  if (r.settle_batches >= 0) {
    j["settle_batches"] = r.settle_batches;
    j["autotune_changes"] = r.autotune_changes;
    j["auto_workers"] = r.auto_workers;
    j["auto_prefetch"] = r.auto_prefetch;
    j["settled_samples_per_s"] = r.settled_samples_per_s;
  }
  if (!r.note.empty()) j["note"] = r.note;
  return j.dump();
}

RunResult parse_json_line(const RunConfig& config, const std::string& line) try {
  const nlohmann::json j = nlohmann::json::parse(line);
  RunResult r;
  r.config = config;
  r.config.loader = j.value("loader", config.loader);  // pytorch, or pytorch-getitems
  r.config.workers = j.at("workers").get<int64_t>();
  r.dataset_size = j.at("dataset_size").get<int64_t>();
  r.batches = j.at("batches").get<int64_t>();
  r.samples = j.at("samples").get<int64_t>();
  r.first_batch_s = j.at("first_batch_s").get<double>();
  r.samples_per_s = j.at("samples_per_s").get<double>();
  if (j.contains("checksum")) r.checksum = j.at("checksum").get<std::string>();
  r.mb_per_s = j.at("mb_per_s").get<double>();
  r.wall_s = j.at("wall_s").get<double>();
  r.teardown_s = j.at("teardown_s").get<double>();
  r.config.batch_size = j.value("batch_size", config.batch_size);
  r.config.prefetch = j.value("prefetch", config.prefetch);
  r.wait_p50_ms = j.value("wait_p50_ms", 0.0);
  r.wait_p99_ms = j.value("wait_p99_ms", 0.0);
  r.utilisation = j.value("utilisation", -1.0);
  r.busy_ms_per_batch = j.value("busy_ms_per_batch", -1.0);
  r.head_of_line_s = j.value("head_of_line_s", -1.0);
  if (j.contains("stage_ms_per_batch")) {
    for (const char* name : kStageNames) {
      r.stage_ms_per_batch.push_back(j.at("stage_ms_per_batch").value(name, 0.0));
    }
  }
  r.on_cpu = j.value("on_cpu", -1.0);
  r.corrupt = j.value("corrupt", int64_t{0});
  r.corrupt_examples = j.value("corrupt_examples", std::vector<int64_t>{});
  r.epochs = j.value("epochs", int64_t{-1});
  r.memory_growth_warnings = j.value("memory_growth_warnings", int64_t{-1});
  r.worker_private_growth_mb = j.value("worker_private_growth_mb", -1.0);
  r.second_half_samples_per_s = j.value("second_half_samples_per_s", -1.0);
  r.settle_batches = j.value("settle_batches", int64_t{-1});
  r.autotune_changes = j.value("autotune_changes", int64_t{-1});
  r.auto_workers = j.value("auto_workers", int64_t{-1});
  r.auto_prefetch = j.value("auto_prefetch", int64_t{-1});
  r.settled_samples_per_s = j.value("settled_samples_per_s", -1.0);
  if (j.contains("note")) r.note = j.at("note").get<std::string>();
  return r;
} catch (const nlohmann::json::exception& e) {
  throw std::runtime_error(e.what());
}

void print_table_header(std::ostream& out) {
  char line[160];
  std::snprintf(line, sizeof line,
                "%-16s %-10s %7s %6s %8s %12s %10s %13s %8s %8s %6s %8s %8s %10s", "loader",
                "workload", "workers", "batch", "prefetch", "samples/s", "MB/s", "first_batch_s",
                "wait_p50", "wait_p99", "util", "hol_s", "wall_s", "teardown_s");
  out << line << '\n';
}

void print_table_row(std::ostream& out, const RunResult& r) {
  char line[240], util[16] = "-", hol[16] = "-";
  if (r.utilisation >= 0) std::snprintf(util, sizeof util, "%.2f", r.utilisation);
  if (r.head_of_line_s >= 0) std::snprintf(hol, sizeof hol, "%.4f", r.head_of_line_s);
  std::snprintf(line, sizeof line,
                "%-16s %-10s %7s %6lld %8s %12.1f %10.1f %13.4f %8.2f %8.2f %6s %8s %8.3f "
                "%10.4f",
                r.config.loader.c_str(), r.config.workload.c_str(), workers_text(r).c_str(),
                static_cast<long long>(r.config.batch_size), prefetch_text(r).c_str(),
                r.samples_per_s,
                r.mb_per_s,
                r.first_batch_s, r.wait_p50_ms, r.wait_p99_ms, util, hol, r.wall_s,
                r.teardown_s);
  out << line << '\n';
}

void print_token_rates(std::ostream& out, const std::vector<RunResult>& results) {
  // (workers, batch size, prefetch, context) -> PyTorch's tokens/s, the reference.
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t>;
  const auto key_of = [](const RunResult& r) {
    return Key{r.config.workers, r.config.batch_size, r.config.prefetch, r.config.context};
  };
  std::map<Key, double> pytorch;
  bool any = false;
  for (const RunResult& r : results) {
    if (r.config.workload != "stream") continue;
    any = true;
    if (r.config.loader == "pytorch") pytorch.emplace(key_of(r), r.tokens_per_s());
  }
  if (!any) return;
  out << "\nstream tokens/s (samples/s x context), and relative to pytorch:\n";
  for (const RunResult& r : results) {
    if (r.config.workload != "stream") continue;
    char line[160], ratio[32] = "-";
    const auto ref = pytorch.find(key_of(r));
    if (ref != pytorch.end() && ref->second > 0) {
      std::snprintf(ratio, sizeof ratio, "%.2fx", r.tokens_per_s() / ref->second);
    }
    std::snprintf(line, sizeof line, "  %-16s workers=%-3lld batch=%-5lld context=%-6lld %14.0f  %s",
                  r.config.loader.c_str(), static_cast<long long>(r.config.workers),
                  static_cast<long long>(r.config.batch_size),
                  static_cast<long long>(r.config.context), r.tokens_per_s(), ratio);
    out << line << '\n';
  }
}

void print_ratios(std::ostream& out, const std::vector<RunResult>& results) {
  // (workload, workers, batch size, prefetch) -> mploader's rate, in the order first seen.
  using Key = std::tuple<std::string, int64_t, int64_t, int64_t>;
  const auto key_of = [](const RunResult& r) {
    return Key{r.config.workload, r.config.workers, r.config.batch_size, r.config.prefetch};
  };
  std::vector<Key> keys;
  std::map<Key, double> mploader_rate;
  for (const RunResult& r : results) {
    if (r.config.loader != "mploader") continue;
    if (mploader_rate.emplace(key_of(r), r.samples_per_s).second) keys.push_back(key_of(r));
  }
  if (keys.empty()) return;
  out << "\nmploader samples/s relative to the others:\n";
  for (const Key& key : keys) {
    std::string line = "  " + std::get<0>(key) + " workers=" + std::to_string(std::get<1>(key)) +
                       " batch=" + std::to_string(std::get<2>(key)) +
                       " prefetch=" + std::to_string(std::get<3>(key)) + ":";
    const size_t bare = line.size();
    for (const RunResult& r : results) {
      if (r.config.loader == "mploader" || key_of(r) != key) continue;
      char ratio[64];
      const double x = r.samples_per_s > 0 ? mploader_rate[key] / r.samples_per_s : 0.0;
      std::snprintf(ratio, sizeof ratio, "  mploader/%s %.2fx", r.config.loader.c_str(), x);
      line += ratio;
    }
    out << line << (line.size() == bare ? "  (no other loader measured)" : "") << '\n';
  }
}

}  // namespace bench

namespace bench {

void print_stage_split(std::ostream& out, const std::vector<RunResult>& results) {
  bool any = false;
  for (const RunResult& r : results) any = any || !r.stage_ms_per_batch.empty();
  if (!any) return;
  out << "\nwhere mploader's workers spent each batch (busy ms per batch, by stage), and the "
         "share of it on a CPU (low: waiting on I/O):\n";
  char line[200];
  std::snprintf(line, sizeof line, "%-16s %-10s %7s %6s %8s %9s %9s %9s %9s %9s %9s %6s",
                "loader", "workload", "workers", "batch", "prefetch", "read", "decode",
                "transform", "write", "hand-off", "busy", "on_cpu");
  out << line << '\n';
  for (const RunResult& r : results) {
    if (r.stage_ms_per_batch.size() != kStageNames.size()) continue;
    const std::vector<double>& ms = r.stage_ms_per_batch;
    std::snprintf(line, sizeof line,
                  "%-16s %-10s %7s %6lld %8s %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %5.0f%%",
                  r.config.loader.c_str(), r.config.workload.c_str(), workers_text(r).c_str(),
                  static_cast<long long>(r.config.batch_size), prefetch_text(r).c_str(), ms[0],
                  ms[1], ms[2], ms[3], ms[4],
                  r.busy_ms_per_batch, 100.0 * std::max(0.0, r.on_cpu));
    out << line << '\n';
  }
}

}  // namespace bench

namespace bench {

namespace {

// The fastest mploader row of `auto_row`'s workload and batch size, at most `cpus` workers
// (0: any count); null when none.
const RunResult* best_fixed(const std::vector<RunResult>& results, const RunResult& auto_row,
                            int64_t cpus) {
  const RunResult* best = nullptr;
  for (const RunResult& f : results) {
    if (f.config.loader != "mploader" || f.config.workload != auto_row.config.workload ||
        f.config.batch_size != auto_row.config.batch_size ||
        (cpus > 0 && f.config.workers > cpus)) {
      continue;
    }
    if (!best || f.samples_per_s > best->samples_per_s) best = &f;
  }
  return best;
}

// "w=2 p=4 2544.5 0.98x": a fixed row, its rate and the autotuned rate's ratio to it.
std::string against(const RunResult* best, const RunResult& auto_row) {
  if (!best) return "-";
  char text[80];
  const double ratio = best->samples_per_s > 0 && auto_row.settled_samples_per_s > 0
                           ? auto_row.settled_samples_per_s / best->samples_per_s
                           : 0;
  std::snprintf(text, sizeof text, "w=%lld p=%lld %.1f %.2fx",
                static_cast<long long>(best->config.workers),
                static_cast<long long>(best->config.prefetch), best->samples_per_s, ratio);
  return text;
}

// Every mploader row of the autotuned row's workload and batch size, by the rate over the
// second half of its batches, each against the best fixed row's: "  second half (...): w=2
// p=2 1062.0 0.17x; ...; auto w=16 p=2 6400.0 0.99x;".
void print_second_half(std::ostream& out, const std::vector<RunResult>& results,
                       const RunResult& auto_row) {
  double best = 0;
  std::vector<const RunResult*> rows;
  for (const RunResult& r : results) {
    if ((r.config.loader != "mploader" && &r != &auto_row) ||
        r.config.workload != auto_row.config.workload ||
        r.config.batch_size != auto_row.config.batch_size || r.second_half_samples_per_s < 0) {
      continue;
    }
    rows.push_back(&r);
    if (&r != &auto_row) best = std::max(best, r.second_half_samples_per_s);
  }
  if (best <= 0) return;
  out << "  second half (s/s, against the best fixed):";
  for (const RunResult* r : rows) {
    char text[100];
    const bool is_auto = r == &auto_row;
    std::snprintf(text, sizeof text, " %s=%lld p=%lld %.1f %.2fx;", is_auto ? "auto w" : "w",
                  static_cast<long long>(is_auto ? r->auto_workers : r->config.workers),
                  static_cast<long long>(is_auto ? r->auto_prefetch : r->config.prefetch),
                  r->second_half_samples_per_s, r->second_half_samples_per_s / best);
    out << text;
  }
  out << '\n';
}

}  // namespace

void print_autotune(std::ostream& out, const std::vector<RunResult>& results, int64_t cpus) {
  bool any = false;
  for (const RunResult& r : results) {
    if (r.config.loader != "mploader-auto" || r.settle_batches < 0) continue;
    if (!any) {
      out << "\nautotuned (mploader-auto) against the best fixed mploader rows, within the "
          << cpus << " CPU(s) of the budget and of any count:\n";
      char head[200];
      std::snprintf(head, sizeof head, "%-10s %6s %12s %8s %8s %8s  %-28s %s", "workload",
                    "batch", "settled s/s", "settled", "workers", "prefetch",
                    "best within the CPUs", "best of any count");
      out << head << '\n';
      any = true;
    }
    char line[300];
    std::snprintf(line, sizeof line, "%-10s %6lld %12.1f %8lld %8lld %8lld  %-28s %s",
                  r.config.workload.c_str(), static_cast<long long>(r.config.batch_size),
                  r.settled_samples_per_s, static_cast<long long>(r.settle_batches),
                  static_cast<long long>(r.auto_workers), static_cast<long long>(r.auto_prefetch),
                  against(best_fixed(results, r, cpus), r).c_str(),
                  against(best_fixed(results, r, 0), r).c_str());
    out << line << '\n';
    print_second_half(out, results, r);
  }
  if (any) {
    out << "  (settled: the batch of the autotuner's last change; settled s/s: samples/s after "
           "it. Past the CPUs a compute-bound row takes CPU time a training step would need, "
           "which the autotuner does not.)\n";
  }
}

}  // namespace bench
