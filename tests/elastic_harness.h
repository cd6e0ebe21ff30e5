// Elastic resume (include/mploader/elastic.h) driven as a job would drive it, with the ranks of
// each phase run one after another in this process: every rank builds its Loader, takes some
// steps of the epoch, and saves its state; the states merge into a job state, which the ranks of
// the next phase, of another world size, load. A phase may SIGKILL a worker of each rank while
// it runs, which the Loader replaces. What each phase delivered is counted per sample.
#pragma once

#include <mploader/elastic.h>
#include <mploader/loader.h>

#include <catch2/catch.hpp>

#include <signal.h>

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace elastic_harness {

// A rank's Loader for a job of `world` ranks.
using MakeLoader = std::function<std::unique_ptr<mploader::Loader>(int64_t world, int64_t rank)>;

struct Phase {
  std::vector<std::string> states;  // each rank's state_dict() where it stopped
  std::vector<size_t> steps;        // batches each rank took
  std::string job() const { return mploader::merge_loader_states(states); }
};

// Every rank of `world` runs `epoch` (from `job` when it is not empty) for `steps` batches at
// most, adding each delivered sample index to `seen`; with `kill_after` > 0, one worker of each
// rank is killed after that many batches.
inline Phase run_phase(const MakeLoader& make, int64_t world, uint64_t epoch,
                       const std::string& job, size_t steps, std::map<int64_t, int>& seen,
                       size_t kill_after = 0) {
  Phase phase;
  for (int64_t rank = 0; rank < world; ++rank) {
    std::unique_ptr<mploader::Loader> loader = make(world, rank);
    if (job.empty()) {
      loader->set_epoch(epoch);
    } else {
      loader->load_state_dict(job);
      REQUIRE(loader->epoch() == epoch);
    }
    size_t taken = 0;
    while (taken < steps) {
      std::optional<mploader::Batch> batch = loader->next();
      if (!batch) break;
      for (int64_t index : batch->indices()) ++seen[index];
      if (++taken == kill_after) {
        const std::vector<int> pids = loader->worker_pids();
        REQUIRE(!pids.empty());
        REQUIRE(kill(pids[0], SIGKILL) == 0);
      }
    }
    phase.states.push_back(loader->state_dict());
    phase.steps.push_back(taken);
  }
  return phase;
}

// Every sample of [0, n) came exactly once.
inline void check_exactly_once(const std::map<int64_t, int>& seen, int64_t n) {
  CHECK(static_cast<int64_t>(seen.size()) == n);
  int wrong = 0;
  for (const auto& [index, count] : seen) {
    if (count != 1 && ++wrong <= 5) FAIL_CHECK("sample " << index << " came " << count << " times");
  }
  CHECK(wrong == 0);
}

// Every rank of a phase took the same number of steps, at least one.
inline void check_equal_steps(const Phase& phase) {
  REQUIRE(!phase.steps.empty());
  CHECK(phase.steps[0] > 0);
  for (size_t s : phase.steps) CHECK(s == phase.steps[0]);
}

// 4 ranks take `steps` steps of `epoch`, then 2 ranks finish it, a worker of each killed; then,
// in a second job, 2 ranks take `steps`, 3 ranks go on for `steps` more, and 2 finish it:
// every sample exactly once, equal steps in every phase.
inline void check_resizes(const MakeLoader& make, int64_t n, uint64_t epoch, size_t steps) {
  {
    INFO("4 ranks, then 2");
    std::map<int64_t, int> seen;
    const Phase four = run_phase(make, 4, epoch, "", steps, seen);
    check_equal_steps(four);
    const Phase two = run_phase(make, 2, epoch, four.job(), SIZE_MAX, seen, 2);
    check_equal_steps(two);
    check_exactly_once(seen, n);
    const mploader::JobStateSummary s = mploader::summarize_job_state(four.job());
    CHECK(s.world_size == 4);
    CHECK(s.steps == steps);
    CHECK(s.delivered > 0);
  }
  {
    INFO("2 ranks, then 3, then 2");
    std::map<int64_t, int> seen;
    const Phase two = run_phase(make, 2, epoch, "", steps, seen);
    const Phase three = run_phase(make, 3, epoch, two.job(), steps, seen, 2);
    check_equal_steps(three);
    const Phase last = run_phase(make, 2, epoch, three.job(), SIZE_MAX, seen);
    check_equal_steps(last);
    check_exactly_once(seen, n);
  }
}

}  // namespace elastic_harness
