// RunTimer: first-batch latency, steady-state rates, wall and teardown time of one run.
#include "run_timer.h"

namespace bench {

namespace {
double seconds(RunTimer::Clock::duration d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

void RunTimer::batch(int64_t samples, int64_t bytes) {
  const Clock::time_point now = Clock::now();
  if (batches_ == 0) {
    first_ = now;
  } else {
    steady_samples_ += samples;
    steady_bytes_ += bytes;
  }
  last_ = now;
  ++batches_;
  samples_ += samples;
}

RunResult RunTimer::finish(const RunConfig& config, size_t dataset_size) const {
  RunResult result;
  result.config = config;
  result.dataset_size = static_cast<int64_t>(dataset_size);
  result.batches = batches_;
  result.samples = samples_;
  if (batches_ == 0) return result;
  result.first_batch_s = seconds(first_ - start_);
  const double steady = seconds(last_ - first_);
  result.samples_per_s = steady > 0 ? steady_samples_ / steady : 0.0;
  result.mb_per_s = steady > 0 ? steady_bytes_ / 1e6 / steady : 0.0;
  result.wall_s = seconds(last_ - start_);
  result.teardown_s = seconds(teardown_end_ - loop_end_);
  return result;
}

}  // namespace bench
