// RunTimer: the one place where mploader-bench turns batch arrival times into the numbers it
// reports, so that every loader is measured the same way.
#pragma once

#include "bench/run_config.h"

#include <ATen/core/Tensor.h>

#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>

namespace bench {

class RunTimer {
 public:
  using Clock = std::chrono::steady_clock;

  // Starts the clock: construct it right before the loader is constructed. `config.step_ms`
  // is the training step batch() spends with each batch.
  explicit RunTimer(const RunConfig& config)
      : start_(Clock::now()), step_(std::chrono::milliseconds(config.step_ms)) {}

  // Call right before asking the loader for the next batch.
  void waiting() { wait_start_ = Clock::now(); }
  // Call as soon as a batch is in hand, with its sample count and the bytes of its tensors;
  // returns after the training step, with the batch still held.
  void batch(int64_t samples, int64_t bytes);
  int64_t batches() const { return batches_; }
  // Call once the last batch has been taken, then again once the loader is destroyed.
  void loop_done() { loop_end_ = Clock::now(); }
  void torn_down() { teardown_end_ = Clock::now(); }
  // Construction start to loop_done(), in seconds.
  double loop_s() const { return std::chrono::duration<double>(loop_end_ - start_).count(); }

  // The result of the run of `config` over a dataset of `dataset_size` samples.
  RunResult finish(const RunConfig& config, size_t dataset_size) const;
  // Samples per second over the batches after batch `from` (counted from 0); -1 when fewer
  // than two batches follow it.
  double samples_per_s_after(int64_t from) const;

 private:
  Clock::time_point start_;
  Clock::duration step_;
  Clock::time_point first_;
  Clock::time_point last_;
  Clock::time_point loop_end_;
  Clock::time_point teardown_end_;
  int64_t batches_ = 0;
  int64_t samples_ = 0;
  int64_t steady_samples_ = 0;  // in the batches after the first
  int64_t steady_bytes_ = 0;
  Clock::time_point wait_start_{};
  std::vector<double> waits_ms_;  // batches after the first
  // Each batch's arrival and the samples up to it.
  std::vector<std::pair<Clock::time_point, int64_t>> arrivals_;
};

inline int64_t tensor_bytes(const at::Tensor& t) { return static_cast<int64_t>(t.nbytes()); }

}  // namespace bench
