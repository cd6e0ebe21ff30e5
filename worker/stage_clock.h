// worker/: what runs in a worker process.
//
// StageClock: splits one task's time into stages (ipc::Stage) and adds it to the region
// header's counters. The clock is read only when the stage changes, so a dataset that writes a
// whole batch in place costs two extra reads per batch, not one per sample; a collator that
// takes one sample at a time costs two per sample (about 40 ns).
#pragma once

#include "core/stage_times.h"
#include "ipc/region_layout.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace mploader::worker {

class StageClock {
 public:
  using Clock = std::chrono::steady_clock;

  // Starts a task, in kWrite: what runs before the first sample is planning the batch.
  void start(Clock::time_point now) {
    for (uint64_t& ns : ns_) ns = 0;
    stage_ = ipc::Stage::kWrite;
    since_ = now;
  }

  // The task moves to `stage`; time since the last change goes to the one it leaves.
  void enter(ipc::Stage stage) {
    if (stage == stage_) return;
    const Clock::time_point now = Clock::now();
    charge(now);
    stage_ = stage;
  }

  // Ends the task at `now`: adds its stages to `header`, moving what the dataset reported as
  // decoding and transforms out of reading (never more than the reading took).
  void finish(Clock::time_point now, ipc::RegionHeader& header) {
    charge(now);
    const detail::DatasetStageTimes reported = detail::take_dataset_stage_times();
    uint64_t& read = ns_[index(ipc::Stage::kRead)];
    const uint64_t decode = std::min(reported.decode_ns, read);
    const uint64_t transform = std::min(reported.transform_ns, read - decode);
    read -= decode + transform;
    ns_[index(ipc::Stage::kDecode)] += decode;
    ns_[index(ipc::Stage::kTransform)] += transform;
    for (uint32_t s = 0; s < kStages; ++s) {
      if (ns_[s] != 0) header.stage_ns[s].fetch_add(ns_[s], std::memory_order_relaxed);
    }
  }

 private:
  static constexpr uint32_t kStages = static_cast<uint32_t>(ipc::Stage::kCount);
  static uint32_t index(ipc::Stage s) { return static_cast<uint32_t>(s); }

  void charge(Clock::time_point now) {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now - since_).count();
    ns_[index(stage_)] += static_cast<uint64_t>(std::max<int64_t>(ns, 0));
    since_ = now;
  }

  uint64_t ns_[kStages] = {};
  ipc::Stage stage_ = ipc::Stage::kWrite;
  Clock::time_point since_{};
};

// The process's CPU time (every thread's), which the worker publishes in RegionHeader::cpu_ns
// so that the main process can tell computing from waiting on I/O. A system call (about
// 0.2 us): the worker reads it when it goes idle and at most every kCpuSampleInterval.
inline uint64_t process_cpu_ns() {
  timespec t{};
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t) != 0) return 0;
  return static_cast<uint64_t>(t.tv_sec) * 1000000000ull + static_cast<uint64_t>(t.tv_nsec);
}

constexpr std::chrono::milliseconds kCpuSampleInterval{20};

}  // namespace mploader::worker
