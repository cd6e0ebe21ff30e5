// MemoryTrend: one worker slot's private and shared memory over an epoch, and the judgement
// whether its private memory keeps growing: the early warning of an OOM kill, given while there
// is still time to act (the Supervisor feeds it; see supervisor.h).
//
// "Keeps growing" is judged against the process's own level once it is warm (kWarmupTasks
// batches done: decoders, allocator arenas and per-worker state are in place by then). It
// means all of: private memory rose, since that level, by at least max(kMinGrowthBytes, a
// quarter of it); it did so in at least kMinRises separate samples (a single step, such as one
// large buffer, is not a trend); the latest sample is one of those rises (it grows still);
// and the warning was not given yet for this slot in this epoch.
//
// Not thread-safe: the Supervisor holds its lock around every call.
#pragma once

#include "supervise/memory_evidence.h"

#include <mploader/stats.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mploader::detail {

// One sample, as the crash report lists them.
struct MemoryPoint {
  int64_t ms = 0;          // since the epoch (or the process, if it started later) began
  uint64_t tasks = 0;      // batches the process had finished
  int64_t private_bytes = 0;
  int64_t shared_bytes = 0;
};

// What the growth warning states.
struct MemoryGrowth {
  uint64_t epoch = 0;
  MemoryPoint warm;  // the process's level once warm
  MemoryPoint now;
  int rises = 0;
  int64_t shared_at_epoch_start = 0;
  // Of the private growth since warm, what rose in the same sampling intervals as shared memory
  // fell, and by no more than it fell: pages moved from shared to private, copy-on-write. A
  // shared mapping that is unmapped drops shared memory with no private rise beside it.
  int64_t copied_bytes = 0;
};

// A worker's memory over the epoch, as a crash report states it.
struct MemoryHistory {
  WorkerMemory summary;
  std::vector<MemoryPoint> series;
};

class MemoryTrend {
 public:
  static constexpr uint64_t kWarmupTasks = 2;
  static constexpr int64_t kMinGrowthBytes = int64_t{64} << 20;
  static constexpr int kMinRises = 3;
  static constexpr size_t kMaxPoints = 64;  // the series is thinned to at most this many

  using Clock = std::chrono::steady_clock;

  // A new process in this slot: its warm level is measured anew. The epoch and whether the
  // warning was given in it carry over (once per slot per epoch).
  // `tasks_done`: the slot's batch counter now (it runs on across processes).
  void new_process(Clock::time_point now, uint64_t tasks_done);
  // A new epoch: its start, peak and series begin again; the warm level stays.
  void new_epoch(uint64_t epoch, Clock::time_point now);
  // Adds a sample; returns the growth to warn about, at most once per epoch.
  std::optional<MemoryGrowth> add(const MemorySplit& memory, uint64_t tasks_done,
                                  Clock::time_point now);

  // The epoch's numbers; also where the epoch and whether it was warned about are kept.
  WorkerMemory summary() const { return summary_; }
  MemoryHistory history() const { return {summary_, series()}; }
  // This epoch's samples, oldest first, thinned evenly when there were more than kMaxPoints;
  // the latest always last.
  std::vector<MemoryPoint> series() const;

 private:
  void record(const MemoryPoint& point);
  // Begins the epoch's numbers and series again at `now`.
  void start_samples(Clock::time_point now, uint64_t epoch, bool warned);

  Clock::time_point origin_{};  // the epoch's start, or the process's if later
  uint64_t tasks_at_start_ = 0;
  std::optional<MemoryPoint> warm_;  // of the current process
  std::optional<MemoryPoint> previous_;  // its latest sample, across epochs
  int64_t high_ = 0;                 // the highest private level since warm_
  int64_t copied_ = 0;               // MemoryGrowth::copied_bytes since warm_
  int rises_ = 0;
  WorkerMemory summary_;
  std::vector<MemoryPoint> series_;
  std::optional<MemoryPoint> latest_;
  uint64_t stride_ = 1;  // keep every stride_-th sample once thinned
};

// The warning for `growth` of worker `worker` (pid `pid`), with the numbers, the likely cause
// and what to change. `cgroup`: the worker's memory cgroup, for its limit and usage.
std::string memory_growth_warning(int worker, int pid, const MemoryGrowth& growth,
                                  const OomCounter& cgroup, int64_t cgroup_usage,
                                  int64_t workers_running, bool persistent_workers);

}  // namespace mploader::detail
