// mploader-bench: measures mploader against libtorch's torch::data loader, PyTorch's
// DataLoader and an in-process ideal on a synthetic and a Fashion-MNIST workload.
//
//   mploader-bench --workload synthetic --workers 0,1,2 --loader mploader,libtorch,inprocess
//   mploader-bench --workload fmnist --loader mploader,pytorch --json
//   mploader-bench --workload tokens --sampler random,bucket   (see run_tokens.h)
//
// Results go to stdout (a table, or with --json one JSON object per configuration per line);
// progress and skips go to stderr. Exit: 0 ok, 1 a run or the data failed, 2 a bad option.
// The workload is prepared once; each configuration then runs in a forked child of its own
// (isolate.h), so no run depends on which ran before it.
#include "cli.h"
#include "isolate.h"
#include "report.h"
#include "run_config.h"
#include "run_tokens.h"
#include "workloads.h"

#include <ATen/Parallel.h>

#include <mploader/dataset.h>
#include <mploader/registry.h>

#include <algorithm>
#include <exception>
#include <iostream>

namespace bench {
namespace {

// Drops "pytorch" from the plan, with a one-line reason, when it cannot run here.
void check_pytorch(Plan& plan) {
  auto it = std::find(plan.loaders.begin(), plan.loaders.end(), "pytorch");
  std::string reason;
  if (it == plan.loaders.end() || pytorch_available(reason)) return;
  std::cerr << "mploader-bench: skipping loader pytorch: " << reason << '\n';
  plan.loaders.erase(it);
}

std::vector<RunResult> run_one(const RunConfig& config,
                               const std::shared_ptr<mploader::Dataset>& data) {
  if (config.loader == "mploader") return {run_mploader(config, data)};
  if (config.loader == "libtorch") return {run_libtorch(config, data)};
  if (config.loader == "inprocess") return {run_inprocess(config, data)};
  return run_pytorch(config);
}

// Runs every loader x workers value on one workload; false if any run failed.
bool run_workload(const Plan& plan, const std::string& workload, std::vector<RunResult>& out) {
  RunConfig config = plan.base;
  config.workload = workload;
  std::cerr << "mploader-bench: preparing workload " << workload << '\n';
  const std::shared_ptr<mploader::Dataset> data = make_workload(config);
  if (static_cast<int64_t>(data->size()) < config.batch_size) {
    throw UsageError("--batch-size: " + std::to_string(config.batch_size) + " is more than the " +
                     workload + " workload's " + std::to_string(data->size()) +
                     " samples; give at most " + std::to_string(data->size()));
  }
  bool ok = true;
  for (int64_t workers : plan.workers) {
    for (const std::string& loader : plan.loaders) {
      config.workers = workers;
      config.loader = loader;
      std::cerr << "mploader-bench: " << loader << " " << workload << " workers=" << workers
                << " batch_size=" << config.batch_size << " batches=" << config.batches << '\n';
      const auto run = [&] { return run_one(config, data); };
      try {
        for (const RunResult& r : run_isolated(config, run)) {
          std::cerr << "mploader-bench:   " << r.samples_per_s << " samples/s, first batch "
                    << r.first_batch_s << " s\n";
          if (plan.json) std::cout << json_line(r) << std::endl;
          out.push_back(r);
        }
      } catch (const std::exception& e) {
        std::cerr << "mploader-bench: " << loader << " " << workload << " workers=" << workers
                  << " failed: " << e.what() << '\n';
        ok = false;
      }
    }
  }
  return ok;
}

int run(Plan& plan) {
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
  for (const std::string& workload : plan.workloads) {
    try {
      ok = run_workload(plan, workload, results) && ok;
    } catch (const UsageError&) {
      throw;
    } catch (const std::exception& e) {
      std::cerr << "mploader-bench: workload " << workload << ": " << e.what() << '\n';
      ok = false;
    }
  }
  if (!plan.json && !results.empty()) {
    print_table_header(std::cout);
    for (const RunResult& r : results) print_table_row(std::cout, r);
    print_ratios(std::cout, results);
  }
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace bench

int main(int argc, char** argv) {
  // --start spawn and forkserver run this program again as workers; they begin here.
  mploader::init(argc, argv);
  try {
    // --workload tokens has its own options (run_tokens.h).
    if (bench::wants_tokens(argc, argv)) return bench::tokens_main(argc, argv);
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
