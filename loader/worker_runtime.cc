#include "loader/worker_runtime.h"

#include "ipc/region_layout.h"
#include "loader/component_settings.h"
#include "loader/in_process_source.h"
#include "loader/shm_budget.h"
#include "loader/slot_probe.h"
#include "util/cpu_budget.h"
#include "util/log.h"
#include "util/units.h"

#include <mploader/errors.h>

#include <algorithm>
#include <chrono>

namespace mploader::detail {

WorkerRuntime::WorkerRuntime(Dataset& dataset, const LoaderOptions& options,
                             std::shared_ptr<Quarantine> quarantine)
    : dataset_(dataset),
      collator_(options.collate),
      persistent_workers_(options.persistent_workers),
      quarantine_(std::move(quarantine)),
      epochs_(epoch_context(options)) {
  if (options.num_workers == 0) {
    source_ = std::make_unique<InProcessSource>(dataset_, *collator_, skips_, options.seed);
    return;
  }
  config_ = pool_config(options, dataset_);
  prefetch_factor_ = starting_prefetch(options);
  dispatcher_settings_ = dispatcher_settings(options);
  supervisor_settings_ = supervisor_settings(options);
  supervisor_settings_.quarantine = quarantine_;
  // The probe is a worker process and holds descriptors too: a soft limit too low for the
  // loader is raised, and one that cannot be raised refused, before it starts. Left to the
  // probe, the limit would surface as an EMFILE from wherever it ran out (under UBSan, as a
  // failed vptr check: that check needs a spare descriptor). The other checks need the slot
  // size, hence after the probe.
  refuse_impossible_fd_limits();
  config_.slot_bytes = probe_slot_bytes(dataset_, options, config_);
  const std::string shm_cap = fit_workers_to_shm(config_, options, shm_budget(options));
  if (options.num_workers == kAuto || options.prefetch_factor == kAuto) {
    make_autotuner(options, shm_cap);
  }
  log().debug("mploader: {} workers, {} slots of {} each", config_.worker_slots,
              config_.num_slots, human_bytes(config_.slot_bytes));
  run_preflight();
  start_workers(0);  // now, so that whatever cannot work fails in the constructor
}

WorkerRuntime::~WorkerRuntime() { stop_workers(); }

EpochContext WorkerRuntime::epoch_context(const LoaderOptions& options) {
  EpochContext c;
  const CpuBudget budget = cpu_budget();
  c.workers_running = starting_workers(options, budget.cpus());
  c.prefetch_factor = starting_prefetch(options);
  c.in_order = options.in_order;
  if (options.num_workers != 0) {
    c.cpu_budget = budget.cpus();
    c.cpu_budget_source = budget.source();
  }
  return c;
}

// This machine's limits, and what the pool configured so far needs of them.
PreflightInput WorkerRuntime::preflight_input() const {
  PreflightInput input;
  input.worker_slots = config_.worker_slots;
  input.autotuned = autotune_ != nullptr;
  input.region_bytes = ipc::RegionGeometry::compute(config_.num_descriptors, config_.num_slots,
                                                    config_.max_indices, config_.slot_bytes)
                           .total_bytes;
  input.slot_bytes = config_.slot_bytes;
  input.shm_dir = config_.shm_dir;
  input.start_method = config_.start_method;
  measure_machine(input);
  return input;
}

// Raises a low RLIMIT_NOFILE soft limit; throws when the limits cannot fit the loader.
void WorkerRuntime::refuse_impossible_fd_limits() const {
  PreflightInput input = preflight_input();
  raise_fd_soft_limit(input);
  for (const PreflightFinding& finding : preflight_fds(input)) {
    if (finding.error && finding.what == "memory") throw OptionError("batch_size", finding.message);
    if (finding.error) throw Error(finding.message);
  }
}

// Logs what may go wrong on this machine; throws what cannot work.
void WorkerRuntime::run_preflight() const {
  PreflightInput input = preflight_input();
  raise_fd_soft_limit(input);
  for (const PreflightFinding& finding : preflight(input)) {
    if (finding.error && finding.what == "memory") throw OptionError("batch_size", finding.message);
    if (finding.error) throw Error(finding.message);
    log().warn(finding.message);
  }
}

void WorkerRuntime::start_workers(uint64_t epoch) {
  PoolConfig config = config_;
  config.worker_settings.first_epoch = epoch;  // the one setting that differs between pools
  pool_ = std::make_unique<WorkerPool>(dataset_, *collator_, config);
  auto dispatcher = std::make_unique<Dispatcher>(*pool_, dispatcher_settings_, prefetch_factor_,
                                                 supervisor_settings_, notices_, skips_);
  dispatcher_ = dispatcher.get();
  source_ = std::move(dispatcher);
}

// Batches already delivered keep their memory: their slots hold the region mapped.
void WorkerRuntime::stop_workers() {
  if (!pool_) return;
  stopped_stats_ = stats();  // the next pool's counters add to these
  if (dispatcher_) {  // the next pool starts with the workers this one ran
    config_.workers_running = static_cast<int>(dispatcher_->taking_tasks());
  }
  dispatcher_ = nullptr;
  source_.reset();  // and its supervisor, before the orderly shutdown, whose exits are no deaths
  pool_->shutdown();
  pool_.reset();
}

void WorkerRuntime::start_epoch(EpochPlan plan) {
  epoch_ = plan.epoch;
  apply_pending_workers();
  if (!source_) start_workers(plan.epoch);
  if (pool_) epochs_.start(plan.epoch, stats());
  if (dispatcher_) dispatcher_->set_prefetch_plan(std::move(plan.prefetch));
  // Samples quarantined in an earlier epoch, named by a loaded state or quarantined during
  // this one: no worker sees them again. Sequences stay those of the full plan, so
  // state_dict() is unchanged by this.
  source_->start_epoch(std::make_shared<LeaveOutQuarantined>(std::move(plan.batches), quarantine_,
                                                             skips_, plan.epoch),
                       plan.epoch);
}

std::optional<Batch> WorkerRuntime::next() {
  const auto wait_start = std::chrono::steady_clock::now();
  std::optional<Batch> batch = source_->next();
  wait_ns_ += static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now() - wait_start)
                                        .count());
  batches_taken_ += batch ? 1 : 0;
  if (batch && autotune_ && dispatcher_) autotune_step();
  drain_skips();
  if (!batch) finish_epoch();
  if (!batch && !persistent_workers_) stop_workers();
  return batch;
}

void WorkerRuntime::finish_epoch() {
  if (!pool_) return;
  const std::optional<EpochStats> epoch = epochs_.finish(stats());
  if (!epoch || epoch->summary.empty()) return;
  // Short epochs (tests, tiny datasets) say little and would flood the log, and an epoch
  // whose loop hardly waited has nothing to change.
  const bool waited = epoch->wait_ns * 10 > epoch->wall_ns;
  if (epoch->wall_ns >= 1000ull * 1000 * 1000 && waited) {
    log().info(epoch->summary);
  } else {
    log().debug(epoch->summary);
  }
}

std::vector<int> WorkerRuntime::worker_pids() const {
  std::vector<int> pids;
  if (!pool_) return pids;
  for (size_t i = 0; i < pool_->size(); ++i) pids.push_back(pool_->channel(i).process.pid);
  return pids;
}

void WorkerRuntime::drain_skips() const {
  if (!pool_) return;
  for (size_t w = 0; w < pool_->size(); ++w) skips_->drain(pool_->channel(w).view.header());
}

LoaderStats WorkerRuntime::stats() const {
  LoaderStats s = stopped_stats_;
  s.batches = batches_taken_;
  s.wait_ns = wait_ns_;
  drain_skips();
  skips_->fill(s);
  s.quarantined = quarantine_->list();
  if (autotune_) s.autotune.assign(autotune_->history().begin(), autotune_->history().end());
  if (!pool_) {
    epochs_.fill(s);
    s.prefetch_factor = prefetch_factor_;
    s.workers_running = 0;
    return s;
  }
  s.workers.resize(std::max(s.workers.size(), pool_->size()));
  for (size_t w = 0; w < pool_->size(); ++w) {
    const ipc::RegionHeader& h = pool_->channel(w).view.header();
    WorkerStats& out = s.workers[w];
    out.busy_ns += h.busy_ns.load(std::memory_order_relaxed);
    out.batches += h.tasks_done.load(std::memory_order_relaxed);
    out.cpu_ns += h.cpu_ns.load(std::memory_order_relaxed);
    StageTimes& st = out.stages;
    const auto stage = [&](ipc::Stage k) {
      return h.stage_ns[static_cast<uint32_t>(k)].load(std::memory_order_relaxed);
    };
    st.read_ns += stage(ipc::Stage::kRead);
    st.decode_ns += stage(ipc::Stage::kDecode);
    st.transform_ns += stage(ipc::Stage::kTransform);
    st.write_ns += stage(ipc::Stage::kWrite);
    st.handoff_ns += stage(ipc::Stage::kHandOff);
  }
  if (source_) {
    s.head_of_line_ns += source_->head_of_line_ns();
    source_->add_memory(s);
  }
  epochs_.fill(s);
  s.workers_running = pool_->workers_running();
  s.prefetch_factor = prefetch_factor_;
  return s;
}

}  // namespace mploader::detail
