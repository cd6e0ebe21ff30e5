// mploader-bench: measures mploader against libtorch's torch::data loader, PyTorch's
// DataLoader and an in-process ideal on synthetic, Fashion-MNIST, JPEG, JPEG-in-tar-shards and
// token-stream workloads, and recommends num_workers from sweeps.
//
//   mploader-bench --workload synthetic --workers 0,1,2 --loader mploader,libtorch,inprocess
//   mploader-bench --workload fmnist --loader mploader,pytorch --json
//
// Workloads with a command line of their own register themselves (workload_registry.h), the
// bench's and the components' alike, and take the whole command line; `mploader-bench
// --workload NAME --help` gives theirs.
//
// Results go to stdout (a table, ratios, recommendations; or with --json one JSON object per
// configuration per line), optionally --csv and --plot files; a progress bar (only on a
// terminal) and skips go to stderr. Exit: 0 ok, 1 a run or the data failed, 2 a bad option.
// The workload is prepared once; each configuration then runs in a forked child of its own
// (isolate.h), so no run depends on which ran before it.
#include "bench/cli.h"
#include "bench/isolate.h"
#include "bench/outputs.h"
#include "bench/plugin.h"
#include "bench/recommend.h"
#include "bench/report.h"
#include "bench/run_config.h"
#include "bench/workload_registry.h"
#include "bench/workloads/jpeg_dataset.h"
#include "bench/workloads/stream_corpus.h"
#include "bench/workloads/tar_workload.h"
#include "bench/workloads/workloads.h"
#include "util/cpu_budget.h"

#include <ATen/Parallel.h>

#include <mploader/dataset.h>
#include <mploader/registry.h>

#include <algorithm>
#include <exception>
#include <iostream>
#include <map>
#include <set>

namespace bench {
namespace {

bool has_workload(const Plan& plan, const std::string& workload) {
  return std::find(plan.workloads.begin(), plan.workloads.end(), workload) !=
         plan.workloads.end();
}

// Drops "pytorch" from the plan, with a one-line reason, when it cannot run here.
void check_pytorch(Plan& plan) {
  auto it = std::find(plan.loaders.begin(), plan.loaders.end(), "pytorch");
  std::string reason;
  if (it == plan.loaders.end()) return;
  if (!plan.base.dataset_lib.empty()) {
    reason = "PyTorch's rows run the built-in workloads written again in Python "
             "(pytorch_dataloader.py); a --dataset-lib dataset exists only in C++";
  }
  if (reason.empty() && has_workload(plan, "io")) {
    std::cerr << "mploader-bench: skipping loader pytorch for workload io: its reads are a C++ "
                 "timerfd, not written again in Python\n";
  }
  if (reason.empty() && pytorch_available(reason)) return;
  std::cerr << "mploader-bench: skipping loader pytorch: " << reason << '\n';
  plan.loaders.erase(it);
}

std::vector<RunResult> run_one(const RunConfig& config,
                               const std::shared_ptr<mploader::Dataset>& data) {
  if (config.loader == "mploader" || config.loader == "mploader-get" ||
      config.loader == "mploader-auto") {
    return {run_mploader(config, data)};
  }
  if (config.loader == "libtorch") return {run_libtorch(config, data)};
  if (config.loader == "inprocess" || config.loader == "inprocess-copy") {
    return {run_inprocess(config, data)};
  }
  if (config.loader == "limit") return {run_limit(config, data)};
  if (config.workload == "io") return {};  // check_pytorch said why
  return run_pytorch(config);
}

bool has_loader(const Plan& plan, const std::string& loader) {
  return std::find(plan.loaders.begin(), plan.loaders.end(), loader) != plan.loaders.end();
}

// The label of one run, for progress and failure lines.
std::string describe(const RunConfig& c) {
  return c.loader + " " + c.workload + " workers=" +
         (c.workers < 0 ? std::string("auto") : std::to_string(c.workers)) +
         " batch=" + std::to_string(c.batch_size) + " prefetch=" + std::to_string(c.prefetch);
}

// Prepares the workload's data: the jpeg set is generated once when no --data-dir is given (and
// packed into tar shards once for the tar workload), the stream corpus once in any case.
std::shared_ptr<mploader::Dataset> prepare(const Plan& plan, RunConfig& config) {
  const bool pack = config.workload == "tar" && config.tar_dir.empty();
  if ((config.workload == "jpeg" || pack) && config.jpeg_dir.empty()) {
    config.jpeg_dir = default_jpeg_dir(plan.jpeg_count);
    if (!plan.json) std::cerr << "mploader-bench: jpeg set in " << config.jpeg_dir << '\n';
    ensure_jpeg_set(config.jpeg_dir, config.data_dir, plan.jpeg_count);
  }
  if (pack) {
    config.tar_dir = default_tar_dir(plan.jpeg_count);
    if (!plan.json) std::cerr << "mploader-bench: tar shards in " << config.tar_dir << '\n';
    ensure_tar_shards(config.tar_dir, config.jpeg_dir);
  }
  if (config.workload == "stream") {
    config.corpus = default_stream_corpus();
    if (!plan.json) std::cerr << "mploader-bench: stream corpus " << config.corpus << '\n';
    ensure_stream_corpus(config.corpus);
  }
  const std::shared_ptr<mploader::Dataset> data = make_workload(config);
  const int64_t largest = *std::max_element(plan.batch_sizes.begin(), plan.batch_sizes.end());
  if (static_cast<int64_t>(data->size()) < largest && config.workload != "synthetic") {
    throw UsageError("--batch-size: " + std::to_string(largest) + " is more than the " +
                     config.workload + " workload's " + std::to_string(data->size()) +
                     " samples; give at most " + std::to_string(data->size()));
  }
  return data;
}

// The rate a comparison reads: an autotuned row's settled samples/s, else samples/s.
double compared_rate(const RunResult& r) {
  return r.config.loader == "mploader-auto" ? r.settled_samples_per_s : r.samples_per_s;
}

// Of `plan.repeat` runs, each row (one per loader the runner reports) of the median run.
std::vector<RunResult> median_runs(const Plan& plan, const RunConfig& config,
                                   const std::shared_ptr<mploader::Dataset>& data) {
  const auto run = [&] { return run_one(config, data); };
  std::vector<std::vector<RunResult>> runs;
  for (int64_t i = 0; i < plan.repeat; ++i) runs.push_back(run_isolated(config, run));
  std::vector<RunResult> kept;
  for (size_t row = 0; row < runs.front().size(); ++row) {
    std::vector<const RunResult*> same;
    for (const std::vector<RunResult>& r : runs) {
      if (row < r.size()) same.push_back(&r[row]);
    }
    std::sort(same.begin(), same.end(), [](const RunResult* a, const RunResult* b) {
      return compared_rate(*a) < compared_rate(*b);
    });
    kept.push_back(*same[same.size() / 2]);
  }
  return kept;
}

// Runs one configuration in a forked child (plan.repeat times); false if it failed (said on
// stderr).
bool run_config(const Plan& plan, const RunConfig& config,
                const std::shared_ptr<mploader::Dataset>& data, std::vector<RunResult>& out) {
  try {
    for (const RunResult& r : median_runs(plan, config, data)) {
      if (plan.json) std::cout << json_line(r) << std::endl;
      out.push_back(r);
    }
    return true;
  } catch (const std::exception& e) {
    std::cerr << "mploader-bench: " << describe(config) << " failed: " << e.what() << '\n';
    return false;
  }
}

// Runs every batch size x prefetch x workers value x loader on one workload; false if any run
// failed.
bool run_workload(const Plan& plan, const std::string& workload, Progress& progress,
                  std::vector<RunResult>& out) {
  RunConfig config = plan.base;
  config.workload = workload;
  bool ok = true;
  for (int64_t batch_size : plan.batch_sizes) {
    config.batch_size = batch_size;
    // Synthetic holds exactly batches x batch_size samples: one dataset per batch size.
    const std::shared_ptr<mploader::Dataset> data = prepare(plan, config);
    const bool in_place = data->sample_layout().has_value();
    if (!in_place && has_loader(plan, "limit") && batch_size == plan.batch_sizes.front()) {
      std::cerr << "mploader-bench: skipping loader limit on " << workload << ": the dataset "
                << "does not write in place (no sample_layout()), so it has no one-write limit\n";
    }
    for (int64_t prefetch : plan.prefetches) {
      for (int64_t workers : plan.workers) {
        for (const std::string& loader : plan.loaders) {
          if (loader == "limit" && !in_place) continue;
          const bool autotuned = loader == "mploader-auto";  // once, choosing both itself
          if (autotuned && (workers != plan.workers.front() ||
                            prefetch != plan.prefetches.front())) {
            continue;
          }
          config.prefetch = prefetch;
          config.workers = autotuned ? -1 : workers;
          config.loader = loader;
          progress.step(describe(config));
          ok = run_config(plan, config, data, out) && ok;
        }
      }
    }
  }
  return ok;
}

// Jpeg samples that came from unreadable or corrupt files, once per workload.
void report_corrupt(const Plan& plan, const std::vector<RunResult>& results) {
  for (const RunResult& r : results) {
    if (r.corrupt == 0 || r.config.workload != "jpeg") continue;
    std::cerr << "mploader-bench: jpeg: " << r.corrupt << " samples in a run of " << r.samples
              << " came from unreadable or corrupt files (replaced by the next good file), e.g.";
    const auto files =
        make_jpeg_dataset(r.config.jpeg_dir.empty() ? plan.base.jpeg_dir : r.config.jpeg_dir);
    for (int64_t index : r.corrupt_examples) std::cerr << ' ' << jpeg_path(*files, index);
    std::cerr << '\n';
    return;
  }
}

// A run that went through its dataset more than once measured epoch boundaries too: there the
// loader's queue drains and refills. Said once per workload, with the largest count.
void report_epochs(const std::vector<RunResult>& results) {
  std::map<std::string, const RunResult*> most;  // only workloads with such a run
  for (const RunResult& r : results) {
    if (r.epochs <= 1 || r.config.workers < 0) continue;  // mploader-auto: no fixed count
    auto [it, fresh] = most.emplace(r.config.workload, &r);
    if (!fresh && r.epochs > it->second->epochs) it->second = &r;
  }
  for (const auto& [workload, r] : most) {
    std::cerr << "mploader-bench: " << workload << ": a run of " << r->batches
              << " batches of " << r->config.batch_size << " went through the "
              << r->dataset_size << "-sample dataset " << r->epochs
              << " times (mploader, " << r->config.workers
              << (r->config.workers == 1 ? " worker" : " workers")
              << "); its samples/s include each epoch's start, where the workers' queue "
                 "refills. For the steady rate give more data, or --batches "
              << r->dataset_size / std::max<int64_t>(1, r->config.batch_size)
              << " or fewer at this batch size\n";
  }
}

void print_summary(const Plan& plan, const std::vector<RunResult>& results) {
  if (!plan.csv.empty()) write_csv(plan.csv, results);
  if (!plan.plot.empty()) std::cerr << "mploader-bench: " << write_plot(plan.plot, results) << '\n';
  report_corrupt(plan, results);
  report_epochs(results);
  std::set<std::string> said;  // each loader's note once per workload
  for (const RunResult& r : results) {
    if (!r.note.empty() && said.insert(r.config.loader + " " + r.config.workload).second) {
      std::cerr << "mploader-bench: " << r.config.loader << " " << r.config.workload << ": "
                << r.note << '\n';
    }
  }
  const mploader::detail::CpuBudget cpus = mploader::detail::cpu_budget();
  const CpuLimit limit{cpus.cpus(), cpus.source()};
  const std::vector<Recommendation> recs = recommend(results, limit);
  if (plan.json) {
    for (const Recommendation& rec : recs) std::cout << json_recommendation(rec, limit) << '\n';
    return;
  }
  print_table_header(std::cout);
  for (const RunResult& r : results) print_table_row(std::cout, r);
  print_token_rates(std::cout, results);
  print_stage_split(std::cout, results);
  print_ratios(std::cout, results);
  print_autotune(std::cout, results, cpus.cpus());
  print_recommendations(std::cout, recs);
  std::cout << '\n';
  print_scaling(std::cout, results, cpus.cpus());
}

// Loads --dataset-lib (bench/plugin.h); the command line names a dataset it registers.
void load_plugin(const Plan& plan) {
  if (plan.base.dataset_lib.empty()) return;
  const DatasetPlugin plugin = load_dataset_plugin(plan.base.dataset_lib);
  if (!plan.workloads.empty()) return;
  throw UsageError("--dataset-lib: give --dataset NAME too, one of the datasets '" +
                   plan.base.dataset_lib + "' registers: " + dataset_names(plugin));
}

int run(Plan& plan) {
  load_plugin(plan);
  // One intra-op thread everywhere (as PyTorch's DataLoader workers and the Python script do):
  // the loaders' own workers are what is measured, and fork stays OpenMP-safe.
  at::set_num_threads(1);
  check_pytorch(plan);
  if (plan.loaders.empty()) {
    std::cerr << "mploader-bench: no loader left to run\n";
    return 1;
  }
  std::vector<RunResult> results;
  bool ok = true;
  Progress progress(static_cast<int64_t>(plan.workloads.size() * plan.batch_sizes.size() *
                                         plan.prefetches.size() * plan.workers.size() *
                                         plan.loaders.size()));
  for (const std::string& workload : plan.workloads) {
    try {
      ok = run_workload(plan, workload, progress, results) && ok;
    } catch (const UsageError&) {
      throw;
    } catch (const std::exception& e) {
      std::cerr << "mploader-bench: workload " << workload << ": " << e.what() << '\n';
      ok = false;
    }
  }
  progress.finish();
  if (!results.empty()) print_summary(plan, results);
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace bench

int main(int argc, char** argv) {
  try {
    // --start spawn and forkserver run this program again as workers; they begin here, with
    // the --dataset-lib libraries their parent loaded, whose factories rebuild the dataset.
    bench::load_inherited_plugins();
    mploader::init(argc, argv);
    // A workload with options of its own parses the command line itself.
    if (const bench::OwnWorkload* own = bench::asked_workload(argc, argv)) {
      return own->main(argc, argv);
    }
    bench::Plan plan;
    if (!bench::parse_command_line(argc, argv, plan)) return 0;
    return bench::run(plan);
  } catch (const bench::UsageError& e) {
    std::cerr << "mploader-bench: " << e.what() << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "mploader-bench: " << e.what() << '\n';
    return 1;
  }
}
