// WorkerRuntime's autotuning half (num_workers or prefetch_factor = kAuto): the limits, and
// the steps the Autotuner judges, taken between batches or, for a StreamingDataset, between
// epochs.
#include "loader/component_settings.h"
#include "loader/worker_runtime.h"
#include "util/cpu_budget.h"
#include "util/log.h"

#include <mploader/streaming.h>

namespace mploader::detail {
namespace {

std::string describe_change(const AutotuneChange& c, bool next_epoch) {
  std::string what;
  if (c.workers_after != c.workers_before) {
    what = std::to_string(c.workers_before) + " -> " + std::to_string(c.workers_after) +
           " workers" + (next_epoch ? " from the next epoch" : "");
  } else {
    what = "prefetch_factor " + std::to_string(c.prefetch_before) + " -> " +
           std::to_string(c.prefetch_after);
  }
  return "mploader: autotune: " + what + " (epoch " + std::to_string(c.epoch) + ", batch " +
         std::to_string(c.batch) + "; CPU budget " + std::to_string(c.cpu_budget) +
         ", at most " + std::to_string(c.max_workers) + " workers): " + c.reason;
}

}  // namespace

void WorkerRuntime::make_autotuner(const LoaderOptions& options, const std::string& shm_cap) {
  const CpuBudget budget = cpu_budget();
  AutotuneLimits l;
  l.workers = options.num_workers == kAuto;
  l.prefetch = options.prefetch_factor == kAuto;
  l.cpu_budget = std::max<int64_t>(1, budget.cpus());
  l.cpu_source = budget.source();
  l.max_workers = config_.num_workers;
  l.max_workers_reason = !l.workers      ? "num_workers is fixed"
                         : shm_cap.empty() ? std::to_string(kIoWorkersPerCpu) +
                                                 " per CPU, for workers that wait on I/O"
                                           : shm_cap;
  l.max_prefetch = static_cast<int64_t>(config_.num_descriptors);
  l.between_epochs = dynamic_cast<const StreamingDataset*>(&dataset_) != nullptr;
  l.churn_every = autotune_churn_for_testing();
  if (l.workers && l.between_epochs && options.world_size > 1) {
    l.workers = false;
    log().info("mploader: autotune: the worker count stays {}: a StreamingDataset's ranks "
               "split their shards by it, and {} ranks choosing apart would deliver different "
               "numbers of batches. Set num_workers to fix it yourself.",
               config_.running_workers, options.world_size);
  }
  log().info("mploader: autotune: starting with {} workers and prefetch_factor {} (CPU budget "
             "{}, {}; at most {} workers: {})",
             config_.running_workers, dispatcher_settings_.prefetch_factor, l.cpu_budget,
             l.cpu_source, l.max_workers, l.max_workers_reason);
  autotune_ = std::make_unique<Autotuner>(std::move(l));
}

void WorkerRuntime::autotune_step() {
  AutotuneCounters now;
  now.at = std::chrono::steady_clock::now();
  now.batches = batches_taken_;
  now.wait_ns = wait_ns_;
  bool all_started = true;
  for (size_t w = 0; w < pool_->size(); ++w) {
    const WorkerChannel& c = pool_->channel(w);
    const ipc::RegionHeader& h = c.view.header();
    now.busy_ns += h.busy_ns.load(std::memory_order_relaxed);
    now.cpu_ns += h.cpu_ns.load(std::memory_order_relaxed);
    all_started &= c.parked || h.phase.load(std::memory_order_relaxed) !=
                                   static_cast<uint32_t>(ipc::WorkerPhase::kStarting);
  }
  const AutotuneVerdict verdict =
      autotune_->after_batch(now, static_cast<int64_t>(dispatcher_->taking_tasks()),
                             dispatcher_->prefetch_factor(), all_started);
  if (verdict.step == AutotuneStep::kNone || !take_step(verdict)) return;
  autotune_->applied(verdict, epoch_, batches_taken_);
  const bool next_epoch = autotune_->limits().between_epochs &&
                          (verdict.step == AutotuneStep::kAddWorker ||
                           verdict.step == AutotuneStep::kRemoveWorker);
  if (!next_epoch) epochs_.set_num_workers(verdict.change.workers_after);
  const std::string line = describe_change(autotune_->history().back(), next_epoch);
  if (autotune_->limits().churn_every > 0) {
    log().debug(line);
  } else {
    log().info(line);
  }
}

bool WorkerRuntime::take_step(const AutotuneVerdict& v) {
  const bool between_epochs = autotune_->limits().between_epochs;
  switch (v.step) {
    case AutotuneStep::kAddWorker:
    case AutotuneStep::kRemoveWorker:
      if (between_epochs) {
        autotune_->set_pending(v.change.workers_after);
        return true;
      }
      return v.step == AutotuneStep::kAddWorker ? dispatcher_->add_worker()
                                                : dispatcher_->remove_worker();
    case AutotuneStep::kRaisePrefetch:
    case AutotuneStep::kLowerPrefetch:
      dispatcher_->set_prefetch_factor(v.change.prefetch_after);
      return true;
    case AutotuneStep::kNone:
      break;
  }
  return false;
}

std::optional<int64_t> WorkerRuntime::next_stream_split() const {
  if (!autotune_ || !autotune_->limits().between_epochs || !autotune_->limits().workers) {
    return std::nullopt;
  }
  if (std::optional<int64_t> pending = autotune_->pending_workers()) return pending;
  return dispatcher_ ? static_cast<int64_t>(dispatcher_->taking_tasks())
                     : static_cast<int64_t>(config_.running_workers);
}

void WorkerRuntime::apply_pending_workers() {
  if (!autotune_) return;
  const std::optional<int64_t> target = autotune_->pending_workers();
  if (!target) return;
  autotune_->clear_pending();
  epochs_.set_num_workers(*target);
  if (!dispatcher_) {  // the next pool starts with it
    config_.running_workers = static_cast<int>(*target);
    return;
  }
  while (static_cast<int64_t>(dispatcher_->taking_tasks()) < *target) {
    if (!dispatcher_->add_worker()) break;
  }
  while (static_cast<int64_t>(dispatcher_->taking_tasks()) > *target) {
    if (!dispatcher_->remove_worker()) break;
  }
}

}  // namespace mploader::detail
