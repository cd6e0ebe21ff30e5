// worker/: what runs in a worker process.
//
// StageClock: splits one task's time into stages (ipc::Stage) and adds it to the region
// header's counters. Stages are counted in CPU timestamp ticks (one rdtsc on x86, a few
// cycles) and the task's steady-clock duration is shared out in their proportion, so no tick
// rate is needed. The counter is read only when the stage changes: a dataset that writes a
// whole batch in place costs a few reads per batch, a collator that takes one sample at a time
// two per sample.
#pragma once

#include "core/stage_times.h"
#include "ipc/region_layout.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace mploader::worker {

class StageClock {
 public:
  using Clock = std::chrono::steady_clock;

  // Starts a task, in kWrite: what runs before the first sample is planning the batch.
  void start() {
    for (uint64_t& t : ticks_) t = 0;
    stage_ = ipc::Stage::kWrite;
    since_ = now_ticks();
  }

  // The task moves to `stage`; ticks since the last change go to the one it leaves.
  void enter(ipc::Stage stage) {
    if (stage == stage_) return;
    charge();
    stage_ = stage;
  }

  // Ends a task that took `busy_ns`: shares it out over the stages, moves what the dataset
  // reported as decoding and transforms out of reading (never more than the reading took),
  // and adds the stages to `header`.
  void finish(uint64_t busy_ns, ipc::RegionHeader& header) {
    charge();
    uint64_t ns[kStages] = {};
    share_out(busy_ns, ns);
    const detail::DatasetStageTimes reported = detail::take_dataset_stage_times();
    uint64_t& read = ns[index(ipc::Stage::kRead)];
    const uint64_t decode = std::min(reported.decode_ns, read);
    const uint64_t transform = std::min(reported.transform_ns, read - decode);
    read -= decode + transform;
    ns[index(ipc::Stage::kDecode)] += decode;
    ns[index(ipc::Stage::kTransform)] += transform;
    for (uint32_t s = 0; s < kStages; ++s) {
      if (ns[s] != 0) header.stage_ns[s].fetch_add(ns[s], std::memory_order_relaxed);
    }
  }

 private:
  static constexpr uint32_t kStages = static_cast<uint32_t>(ipc::Stage::kCount);
  static uint32_t index(ipc::Stage s) { return static_cast<uint32_t>(s); }

  static uint64_t now_ticks() {
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#else
    return static_cast<uint64_t>(Clock::now().time_since_epoch().count());
#endif
  }

  void charge() {
    const uint64_t now = now_ticks();
    ticks_[index(stage_)] += now > since_ ? now - since_ : 0;  // a counter never runs back
    since_ = now;
  }

  // busy_ns in proportion to the stages' ticks; the rounding remainder goes to the last stage
  // with ticks, so that the stages add up to busy_ns exactly.
  void share_out(uint64_t busy_ns, uint64_t (&ns)[kStages]) const {
    unsigned __int128 total = 0;
    for (uint64_t t : ticks_) total += t;
    if (total == 0) {
      ns[index(ipc::Stage::kWrite)] = busy_ns;
      return;
    }
    uint64_t given = 0;
    uint32_t last = 0;
    for (uint32_t s = 0; s < kStages; ++s) {
      if (ticks_[s] == 0) continue;
      ns[s] = static_cast<uint64_t>(busy_ns * static_cast<unsigned __int128>(ticks_[s]) / total);
      given += ns[s];
      last = s;
    }
    ns[last] += busy_ns - given;
  }

  uint64_t ticks_[kStages] = {};
  ipc::Stage stage_ = ipc::Stage::kWrite;
  uint64_t since_ = 0;
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
