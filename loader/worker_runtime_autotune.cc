// WorkerRuntime's autotuning half (num_workers or prefetch_factor = kAuto): the limits, and
// the steps the Autotuner judges, taken between batches or, for a StreamingDataset, between
// epochs.
#include "loader/component_settings.h"

#include "loader/worker_runtime.h"
#include "supervise/memory_evidence.h"
#include "util/cpu_budget.h"
#include "util/log.h"
#include "util/meminfo.h"
#include "util/units.h"

#include <mploader/streaming.h>

#include <unistd.h>

#include <fstream>

namespace mploader::detail {
namespace {

// Of what is free, the share more workers may take: the rest stays for the training process,
// the workers' growth within an epoch and the page cache.
constexpr double kWorkersMemoryShare = 0.5;

// The memory free to more workers, and where that number comes from: MemAvailable, or what
// the memory cgroup has left when that is less.
std::pair<int64_t, std::string> free_memory() {
  std::pair<int64_t, std::string> free{mem_available_bytes(), "MemAvailable"};
  const OomCounter cgroup = read_oom_counter(getpid());
  if (cgroup.limit_bytes > 0) {
    const int64_t room = cgroup.limit_bytes - std::max<int64_t>(0, cgroup_usage_bytes(cgroup));
    if (free.first < 0 || room < free.first) {
      free = {std::max<int64_t>(0, room), "what the memory cgroup has left (limit " +
                                              mebibytes(cgroup.limit_bytes) + ")"};
    }
  }
  return free;
}

std::string describe_change(const AutotuneChange& c, bool next_epoch, const std::string& bound) {
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
         ", at most " + std::to_string(c.max_workers) + " workers, " + bound + "): " + c.reason;
}

// Growth beyond what memory holds is cut: each worker more is taken to need as much private
// memory as the largest running one, and more workers get kWorkersMemoryShare of what is free.
// Records the bound for the log line; false when not one more fits.
bool fit_growth_to_memory(WorkerPool& pool, Autotuner& tuner, AutotuneVerdict& v) {
  int64_t largest = 0;
  for (size_t w = 0; w < pool.size(); ++w) {
    const WorkerChannel& c = pool.channel(w);
    if (c.parked || c.process.pid <= 0) continue;
    if (std::optional<MemorySplit> m = read_memory_split(c.process.pid)) {
      largest = std::max(largest, m->private_bytes);
    }
  }
  const auto [free, source] = free_memory();
  if (largest <= 0 || free < 0) {
    tuner.set_memory_bound("memory not measured");
    return true;
  }
  const auto fit = static_cast<int64_t>(kWorkersMemoryShare * static_cast<double>(free) /
                                        static_cast<double>(largest));
  tuner.set_memory_bound("memory for " + std::to_string(v.change.workers_before + fit) +
                         " (half of " + mebibytes(free) + " of " + source + ", " +
                         mebibytes(largest) + " per worker)");
  const int64_t add = v.change.workers_after - v.change.workers_before;
  if (fit >= add) return true;
  if (fit <= 0) {
    log().debug("mploader: autotune: no worker added: {}", tuner.memory_bound());
    return false;
  }
  v.change.workers_after = v.change.workers_before + fit;
  v.change.reason += "; cut to " + std::to_string(fit) + " more by memory";
  return true;
}

// The running workers' time runnable but waiting for a CPU: the second field of
// /proc/<pid>/schedstat. Not known when one cannot be read (a kernel without it, a worker gone).
void read_queued(WorkerPool& pool, AutotuneCounters& now) {
  now.queued_ns = 0;
  now.queued_known = true;
  for (size_t w = 0; w < pool.size() && now.queued_known; ++w) {
    const WorkerChannel& c = pool.channel(w);
    if (c.parked || c.process.pid <= 0) continue;
    std::ifstream in("/proc/" + std::to_string(c.process.pid) + "/schedstat");
    uint64_t on_cpu = 0, queued = 0;
    now.queued_known = static_cast<bool>(in >> on_cpu >> queued);
    now.queued_ns += queued;
  }
}

// Starts the added workers one at a time; where the slots run out first, the change says so.
bool add_workers(Dispatcher& dispatcher, AutotuneVerdict& v) {
  for (int64_t n = v.change.workers_before; n < v.change.workers_after; ++n) {
    if (!dispatcher.add_worker()) {
      v.change.workers_after = n;
      break;
    }
  }
  return v.change.workers_after > v.change.workers_before;
}

}  // namespace

void WorkerRuntime::make_autotuner(const LoaderOptions& options, const std::string& shm_cap) {
  const CpuBudget budget = cpu_budget();
  AutotuneLimits l;
  l.tune_workers = options.num_workers == kAuto;
  l.tune_prefetch_factor = options.prefetch_factor == kAuto;
  l.cpu_budget = std::max<int64_t>(1, budget.cpus());
  l.cpu_source = budget.source();
  l.max_workers = config_.worker_slots;
  l.max_workers_reason = !l.tune_workers    ? "num_workers is fixed"
                         : shm_cap.empty() ? auto_worker_slots().reason
                                           : shm_cap;
  l.max_prefetch_factor = most_prefetch(options);
  l.between_epochs = dynamic_cast<const StreamingDataset*>(&dataset_) != nullptr;
  l.churn_every = autotune_churn_for_testing();
  if (l.tune_workers && l.between_epochs && options.world_size > 1) {
    l.tune_workers = false;
    log().info("mploader: autotune: the worker count stays {}: a StreamingDataset's ranks "
               "split their shards by it, and {} ranks choosing apart would deliver different "
               "numbers of batches. Set num_workers to fix it yourself.",
               config_.workers_running, options.world_size);
  }
  log().info("mploader: autotune: starting with {} workers and prefetch_factor {} (CPU budget "
             "{}, {}; at most {} workers: {})",
             config_.workers_running, prefetch_factor_, l.cpu_budget,
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
  if (autotune_->window_due(now)) read_queued(*pool_, now);
  const AutotuneVerdict verdict =
      autotune_->after_batch(now, static_cast<int64_t>(dispatcher_->taking_tasks()),
                             prefetch_factor_, all_started);
  if (verdict.step == AutotuneStep::kNone) return;
  AutotuneVerdict taken = verdict;
  const bool adds = taken.step == AutotuneStep::kAddWorker;
  if (adds && !fit_growth_to_memory(*pool_, *autotune_, taken)) return;
  const bool adds_now = adds && !autotune_->limits().between_epochs;
  if (adds_now ? !add_workers(*dispatcher_, taken) : !take_step(taken)) return;
  autotune_->applied(taken, epoch_, batches_taken_);
  const bool next_epoch = autotune_->limits().between_epochs &&
                          (taken.step == AutotuneStep::kAddWorker ||
                           taken.step == AutotuneStep::kRemoveWorker);
  if (!next_epoch) epochs_.set_workers_running(taken.change.workers_after);
  const std::string line = describe_change(autotune_->history().back(), next_epoch,
                                           autotune_->memory_bound());
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
      prefetch_factor_ = dispatcher_->prefetch_factor();
      return true;
    case AutotuneStep::kNone:
      break;
  }
  return false;
}

std::optional<int64_t> WorkerRuntime::next_stream_split() const {
  if (!autotune_ || !autotune_->limits().between_epochs || !autotune_->limits().tune_workers) {
    return std::nullopt;
  }
  if (std::optional<int64_t> pending = autotune_->pending_workers()) return pending;
  return dispatcher_ ? static_cast<int64_t>(dispatcher_->taking_tasks())
                     : static_cast<int64_t>(config_.workers_running);
}

void WorkerRuntime::apply_pending_workers() {
  if (!autotune_) return;
  const std::optional<int64_t> target = autotune_->pending_workers();
  if (!target) return;
  autotune_->clear_pending();
  epochs_.set_workers_running(*target);
  if (!dispatcher_) {  // the next pool starts with it
    config_.workers_running = static_cast<int>(*target);
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
