// The num_workers recommendation and the scaling summary, from measured rows only (pure
// functions: unit-tested on made-up rows in tests/test_bench_recommend.cc).
//
// The rule is mploader::choose_num_workers (mploader/tune.h), which mploader::tune() applies
// too. For each (loader, workload, batch size, prefetch) with two or more worker counts:
//   best   = the highest samples/s of the group;
//   choice = the smallest num_workers whose samples/s is within 5 % of best, among the counts
//            within the CPU budget (util/cpu_budget.h: the affinity mask and the cgroup's CPU
//            quota) when the group measured any: in training, workers beyond it take CPU time
//            from the loop, which the bench's loop, doing no training, does not show;
//   reason, read at `choice` from mploader's own counters (Loader::stats()):
//     - "main-loop bound" when choice is 0 workers (loading in the main process is as fast);
//     - "loop-bound"   when worker utilisation < 0.6 and the loop waits at most a tenth of its
//                       time per batch: the training step sets the pace;
//     - "IPC-bound"    when worker utilisation < 0.6 and the loop waits longer: workers sit
//                       idle while batches are taken and handed back, so the hand-off limits;
//     - "memory-bound" when utilisation >= 0.6 and a worker needs >= 1.3x the busy time per
//                       batch it needed in the group's smallest worker count: workers slow
//                       each other down (memory bandwidth, caches), so more of them add little;
//     - "CPU-bound"    otherwise: workers are busy and each is as fast as alone, so throughput
//                       is what the cores can compute.
//   Loaders without these counters (libtorch, inprocess, pytorch) get the choice and no reason.
#pragma once

#include "bench/run_config.h"

#include <mploader/tune.h>

#include <ostream>
#include <string>
#include <vector>

namespace bench {

// The library's choice for one group (mploader/tune.h), with the group's loader and workload.
struct Recommendation : mploader::TuneChoice {
  std::string loader, workload;
};

// The CPUs the workers may use (0: no limit) and what sets that, for the note.
using CpuLimit = mploader::TuneCpuBudget;

std::vector<Recommendation> recommend(const std::vector<RunResult>& rows,
                                      const CpuLimit& limit = {});
void print_recommendations(std::ostream& out, const std::vector<Recommendation>& recs);

// One recommendation as a JSON object on one line (no newline), for --json: "record":
// "recommendation" (rows have no "record"), then loader, workload, batch_size, prefetch,
// workers, samples_per_s, best_workers, best_samples_per_s, bound, reason, budget_note (empty
// strings when there is none), cpu_budget (0: no limit) and cpu_budget_source.
std::string json_recommendation(const Recommendation& rec, const CpuLimit& limit);

// throughput(workers = cores) / (cores x throughput(workers = 1)) per loader, workload, batch
// size and prefetch that has both rows; printed as lines "scaling efficiency ...".
void print_scaling(std::ostream& out, const std::vector<RunResult>& rows, int64_t cores);

}  // namespace bench
