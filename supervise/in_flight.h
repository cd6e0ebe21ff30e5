// InFlightTable: the one record of the work handed to workers and not yet received back. Per
// worker, by task descriptor id: the epoch run (generation), where the batch stands in the
// run's list and in the epoch's plan, whether it holds a payload-slot promise, and its indices.
//
// Owned and changed by the dispatcher, on the training thread; the supervisor's watch thread
// reads a worker's entries when that worker dies, for its report. The writer reads without
// the lock (no one else writes); every change and every other thread's read takes it. It is
// taken once per batch issued and once per batch received, uncontended but for the moment a
// dead worker's entries are copied.
#pragma once

#include "supervise/diagnosis.h"

#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

namespace mploader::detail {

struct InFlightTask {
  uint64_t generation = 0;  // the dispatcher's epoch run; an older one is abandoned
  uint64_t position = 0;    // in the run's list of batches (a resumed run skips some)
  // A free payload slot was promised (SlotPool::reserve); the worker pops the slot itself.
  // false: it was sent to write an overflow segment.
  bool slot_promised = false;
  InFlightBatch batch;      // epoch, sequence in the epoch's plan, indices: what reports name
};

class InFlightTable {
 public:
  explicit InFlightTable(size_t workers) : tasks_(workers) {}
  InFlightTable(const InFlightTable&) = delete;
  InFlightTable& operator=(const InFlightTable&) = delete;

  // The writer's thread only.
  void add(size_t worker, uint32_t descriptor, InFlightTask task);
  // Removes and returns the task of `descriptor`; nullopt when the worker holds no such task.
  [[nodiscard]] std::optional<InFlightTask> take(size_t worker, uint32_t descriptor);
  // Removes and returns every task of `worker`, in the order they were issued.
  [[nodiscard]] std::vector<InFlightTask> take_all(size_t worker);
  size_t count(size_t worker) const { return tasks_[worker].size(); }
  const std::vector<std::pair<uint32_t, InFlightTask>>& of(size_t worker) const {
    return tasks_[worker];
  }

  // Any thread: the batches `worker` holds, in the order they were issued.
  std::vector<InFlightBatch> snapshot(size_t worker) const;

 private:
  mutable std::mutex mutex_;  // guards changes to tasks_, and reads by other threads
  // A few per worker (prefetch_factor): a vector beats a map.
  std::vector<std::vector<std::pair<uint32_t, InFlightTask>>> tasks_;
};

}  // namespace mploader::detail
