// Loader: the public entry point. Validates options, sizes the ring slots, starts the worker
// pool (or the in-process source) and runs epochs.
#include <mploader/loader.h>

#include "ipc/region_layout.h"
#include "loader/component_settings.h"
#include "loader/dispatcher.h"
#include "loader/in_process_source.h"
#include "util/log.h"
#include "loader/options_check.h"
#include "supervise/preflight.h"
#include "loader/resume_state.h"
#include "loader/slot_probe.h"
#include "supervise/supervisor.h"
#include "util/units.h"
#include "process/worker_pool.h"

#include <mploader/errors.h>

#include <algorithm>
#include <chrono>


namespace mploader {
namespace detail {
namespace {

void check_batches(const std::vector<std::vector<int64_t>>& batches, size_t dataset_size,
                   size_t max_batch) {
  for (size_t b = 0; b < batches.size(); ++b) {
    if (batches[b].empty() || batches[b].size() > max_batch) {
      throw OptionError("batch_sampler",
                        "mploader: the batch sampler returned batch " + std::to_string(b) +
                            " with " + std::to_string(batches[b].size()) +
                            " indices; batches must hold 1 to max_batch_size() = " +
                            std::to_string(max_batch));
    }
    for (int64_t index : batches[b]) {
      if (index < 0 || static_cast<size_t>(index) >= dataset_size) {
        throw OptionError("sampler", "mploader: the sampler produced index " +
                                         std::to_string(index) + " for a dataset of " +
                                         std::to_string(dataset_size) + " samples");
      }
    }
  }
}

}  // namespace

class LoaderCore {
 public:
  LoaderCore(std::shared_ptr<Dataset> dataset, LoaderOptions options)
      : options_(checked_options(dataset.get(), std::move(options))),
        dataset_(std::move(dataset)) {
    if (options_.num_workers == 0) {
      source_ = std::make_unique<InProcessSource>(*dataset_, *options_.collate);
      return;
    }
    config_ = pool_config(options_, *dataset_);
    // The probe is a worker process and holds descriptors too: a soft limit too low for the
    // loader is raised, and one that cannot be raised refused, before it starts. Left to the
    // probe, the limit would surface as an EMFILE from wherever it ran out (under UBSan, as a
    // failed vptr check: that check needs a spare descriptor). The other checks need the slot
    // size, hence after the probe.
    refuse_impossible_fd_limits();
    config_.slot_bytes = probe_slot_bytes(*dataset_, options_, config_);
    log().debug("mploader: {} workers, {} slots of {} each", config_.num_workers,
                config_.num_slots, human_bytes(config_.slot_bytes));
    run_preflight();
    start_workers(0);  // now, so that whatever cannot work fails in the constructor
  }

  ~LoaderCore() { stop_workers(); }

  // This machine's limits, and what the pool configured so far needs of them.
  PreflightInput preflight_input() const {
    PreflightInput input;
    input.num_workers = config_.num_workers;
    input.region_bytes = ipc::RegionGeometry::compute(config_.num_descriptors, config_.num_slots,
                                                      config_.max_indices, config_.slot_bytes)
                             .total_bytes;
    input.slot_bytes = config_.slot_bytes;
    input.prefetch_factor = options_.prefetch_factor;
    input.shm_dir = config_.shm_dir;
    input.start_method = config_.start_method;
    measure_machine(input);
    return input;
  }

  // Raises a low RLIMIT_NOFILE soft limit; throws when the limits cannot fit the loader.
  void refuse_impossible_fd_limits() {
    PreflightInput input = preflight_input();
    raise_fd_soft_limit(input);
    for (const PreflightFinding& finding : preflight_fds(input)) {
      if (finding.error) throw Error(finding.message);
    }
  }

  // Logs what may go wrong on this machine; throws what cannot work.
  void run_preflight() {
    PreflightInput input = preflight_input();
    raise_fd_soft_limit(input);
    for (const PreflightFinding& finding : preflight(input)) {
      if (finding.error) throw Error(finding.message);
      log().warn(finding.message);
    }
  }

  void start_workers(uint64_t epoch) {
    config_.worker_settings.first_epoch = epoch;
    pool_ = std::make_unique<WorkerPool>(*dataset_, *options_.collate, config_);
    book_ = std::make_unique<InFlightBook>(pool_->size());
    supervisor_ = std::make_unique<Supervisor>(*pool_, *book_, supervisor_settings(options_));
    source_ = std::make_unique<Dispatcher>(*pool_, *supervisor_, *book_,
                                           dispatcher_settings(options_), notices_);
  }

  // Batches already delivered keep their memory: their slots hold the region mapped.
  void stop_workers() {
    if (!pool_) return;
    stopped_stats_ = stats();  // the next pool's counters add to these
    source_.reset();
    supervisor_.reset();  // before the orderly shutdown, whose exits are no deaths
    pool_->shutdown();
    pool_.reset();
    book_.reset();
  }

  uint64_t upcoming_epoch() const {
    if (resume_) return resume_->epoch;
    return requested_epoch_ ? *requested_epoch_ : (started_any_ ? epoch_ + 1 : 0);
  }

  void start_epoch() {
    epoch_ = upcoming_epoch();
    requested_epoch_.reset();
    started_any_ = true;
    refused_ = false;
    auto batches = options_.batch_sampler->batches(dataset_->size(), epoch_);
    try {
      check_batches(batches, dataset_->size(), options_.batch_sampler->max_batch_size());
    } catch (const OptionError&) {
      // The sampler would give the same plan on every retry: a loop that catches the error to
      // skip a batch would never end. This error ends the epoch; the next next() says so.
      refused_ = true;
      resume_.reset();
      throw;
    }
    plan_ = fingerprint(batches, dataset_->size());
    delivered_.assign(batches.size(), false);
    std::vector<uint64_t> sequences;
    if (resume_) {
      ResumeState resume = std::move(*resume_);
      resume_.reset();
      check_same_plan(resume, plan_, settings());  // a sampler that is not deterministic
      delivered_ = std::move(resume.delivered);
      batches = remaining_batches(std::move(batches), sequences);
    }
    if (!source_) start_workers(epoch_);
    source_->start_epoch(std::move(batches), std::move(sequences), epoch_);
    running_ = true;
  }

  // The batches not in delivered_, and their sequences in the full plan.
  std::vector<std::vector<int64_t>> remaining_batches(std::vector<std::vector<int64_t>> all,
                                                      std::vector<uint64_t>& sequences) const {
    std::vector<std::vector<int64_t>> remaining;
    for (size_t s = 0; s < all.size(); ++s) {
      if (delivered_[s]) continue;
      remaining.push_back(std::move(all[s]));
      sequences.push_back(s);
    }
    return remaining;
  }

  std::optional<Batch> next() {
    if (!running_ && refused_) {  // the epoch whose plan was refused is over
      refused_ = false;
      return std::nullopt;
    }
    if (!running_) start_epoch();
    const auto wait_start = std::chrono::steady_clock::now();
    std::optional<Batch> batch = source_->next();
    wait_ns_ += static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::steady_clock::now() - wait_start)
                                          .count());
    batches_taken_ += batch ? 1 : 0;
    if (!batch) {
      running_ = false;
      if (!options_.persistent_workers) stop_workers();
    } else if (batch->sequence() < delivered_.size()) {
      delivered_[batch->sequence()] = true;
    }
    return batch;
  }

  RecordedSettings settings() const {
    return RecordedSettings{options_.batch_size, options_.drop_last, options_.shuffle,
                            options_.seed,       options_.in_order,  options_.num_workers};
  }

  // The epoch the next next() continues (a running one, even if all its batches were received:
  // then what remains of it is nothing) or starts, and what of it was received.
  ResumeState state() const {
    if (resume_) return *resume_;
    ResumeState s;
    s.settings = settings();
    if (running_) {
      s.epoch = epoch_;
      s.plan = plan_;
      s.delivered = delivered_;
      return s;
    }
    s.epoch = upcoming_epoch();
    s.plan = fingerprint(options_.batch_sampler->batches(dataset_->size(), s.epoch),
                         dataset_->size());
    s.delivered.assign(s.plan.num_batches, false);
    return s;
  }

  void load_state(const std::string& text) {
    ResumeState saved = from_text(text);
    auto batches = options_.batch_sampler->batches(dataset_->size(), saved.epoch);
    check_same_plan(saved, fingerprint(batches, dataset_->size()), settings());
    running_ = false;  // the next iteration starts the resumed epoch
    refused_ = false;
    requested_epoch_.reset();
    started_any_ = true;
    epoch_ = saved.epoch;
    resume_ = std::move(saved);
  }

  void request_epoch(uint64_t epoch) {
    if (resume_ && resume_->epoch != epoch) {
      log().warn("mploader: set_epoch({}) discards the loaded state of epoch {}; epoch {} "
                 "starts from its first batch",
                 epoch, resume_->epoch, epoch);
      resume_.reset();
    }
    requested_epoch_ = epoch;
  }

  // The counters so far: those of stopped pools plus the live one's.
  LoaderStats stats() const {
    LoaderStats s = stopped_stats_;
    s.batches = batches_taken_;
    s.wait_ns = wait_ns_;
    if (!pool_) return s;
    s.workers.resize(std::max(s.workers.size(), pool_->size()));
    for (size_t w = 0; w < pool_->size(); ++w) {
      const ipc::RegionHeader& h = pool_->channel(w).view.header();
      s.workers[w].busy_ns += h.busy_ns.load(std::memory_order_relaxed);
      s.workers[w].batches += h.tasks_done.load(std::memory_order_relaxed);
    }
    if (source_) s.head_of_line_ns += source_->head_of_line_ns();
    return s;
  }

  LoaderOptions options_;
  std::shared_ptr<Dataset> dataset_;
  LoaderStats stopped_stats_;
  uint64_t wait_ns_ = 0;
  uint64_t batches_taken_ = 0;
  PoolConfig config_;
  std::unique_ptr<WorkerPool> pool_;
  std::unique_ptr<InFlightBook> book_;
  std::unique_ptr<Supervisor> supervisor_;
  std::unique_ptr<BatchSource> source_;
  DispatcherNotices notices_;  // once-per-loader warnings, across epochs' Dispatchers
  std::optional<uint64_t> requested_epoch_;
  std::optional<ResumeState> resume_;  // loaded, applied by the next start_epoch()
  PlanFingerprint plan_;               // of the epoch running (or last run)
  std::vector<bool> delivered_;        // by sequence, of that epoch
  uint64_t epoch_ = 0;
  bool started_any_ = false;
  bool running_ = false;
  bool refused_ = false;  // the last epoch's plan was invalid: it ended with an OptionError
};

}  // namespace detail

Loader::Loader(std::shared_ptr<Dataset> dataset, LoaderOptions options)
    : core_(std::make_unique<detail::LoaderCore>(std::move(dataset), std::move(options))) {}

Loader::~Loader() = default;

void Loader::set_epoch(uint64_t epoch) { core_->request_epoch(epoch); }

uint64_t Loader::epoch() const { return core_->epoch_; }

size_t Loader::batches_per_epoch() const {
  if (core_->resume_) return core_->resume_->plan.num_batches;
  const uint64_t next = core_->upcoming_epoch();
  return core_->options_.batch_sampler->batches(core_->dataset_->size(), next).size();
}

std::string Loader::state_dict() const { return detail::to_text(core_->state()); }

std::string Loader::state_dict_without(const Batch& ahead) const {
  detail::ResumeState state = core_->state();
  if (ahead.epoch() == state.epoch && ahead.sequence() < state.delivered.size()) {
    state.delivered[ahead.sequence()] = false;
  }
  return detail::to_text(state);
}

void Loader::load_state_dict(const std::string& state) { core_->load_state(state); }

Loader::Iterator Loader::begin() {
  core_->start_epoch();
  return Iterator(this, next());
}

std::optional<Batch> Loader::next() { return core_->next(); }

const LoaderOptions& Loader::options() const { return core_->options_; }

LoaderStats Loader::stats() const { return core_->stats(); }

std::vector<int> Loader::worker_pids() const {
  std::vector<int> pids;
  if (!core_->pool_) return pids;
  for (size_t i = 0; i < core_->pool_->size(); ++i) {
    pids.push_back(core_->pool_->channel(i).process.pid);
  }
  return pids;
}

}  // namespace mploader
