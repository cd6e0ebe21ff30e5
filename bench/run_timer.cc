// RunTimer: first-batch latency, steady-state rates, wall and teardown time of one run.
#include "bench/run_timer.h"

#include "bench/workloads/jpeg_dataset.h"

#include <algorithm>
#include <cmath>
#include <thread>

namespace bench {

namespace {
double seconds(RunTimer::Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// The nearest-rank percentile p (0-100) of `values`, which it sorts.
double percentile(std::vector<double>& values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<size_t>(std::ceil(p / 100 * static_cast<double>(values.size())));
  return values[std::clamp<size_t>(rank, 1, values.size()) - 1];
}

}  // namespace

void RunTimer::batch(int64_t samples, int64_t bytes) {
  const Clock::time_point now = Clock::now();
  if (batches_ == 0) {
    first_ = now;
  } else {
    steady_samples_ += samples;
    steady_bytes_ += bytes;
    if (wait_start_ != Clock::time_point{}) waits_ms_.push_back(seconds(now - wait_start_) * 1e3);
  }
  last_ = now;
  ++batches_;
  samples_ += samples;
  arrivals_.emplace_back(now, samples_);
  // A step on a GPU leaves the CPU to the workers: sleep rather than spin.
  if (step_ > Clock::duration::zero()) std::this_thread::sleep_for(step_);
}

double RunTimer::samples_per_s_after(int64_t from) const {
  const auto first = static_cast<size_t>(std::max<int64_t>(0, from));
  if (first + 2 >= arrivals_.size()) return -1;
  const double s = seconds(arrivals_.back().first - arrivals_[first].first);
  return s > 0 ? static_cast<double>(arrivals_.back().second - arrivals_[first].second) / s : -1;
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
  result.second_half_samples_per_s = samples_per_s_after(batches_ / 2);
  result.wall_s = seconds(last_ - start_);
  result.teardown_s = seconds(teardown_end_ - loop_end_);
  std::vector<double> waits = waits_ms_;
  result.wait_p50_ms = percentile(waits, 50);
  result.wait_p99_ms = percentile(waits, 99);
  return result;
}

}  // namespace bench
