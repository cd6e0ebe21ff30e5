// loader/: the Loader itself: options, epochs and resume, dispatching batches.
//
// WorkerRuntime: what produces a Loader's batches, and the counters of where its time went.
// With workers: the pool, its supervisor and the dispatcher, the slots sized by a probe worker
// and the machine checked before the first start; the workers stop after each epoch and start
// again for the next unless persistent_workers. With num_workers == 0: the in-process source.
//
// Used by one thread (the Loader's).
#pragma once

#include "loader/autotune.h"
#include "loader/batch_source.h"
#include "loader/dispatcher.h"
#include "loader/epoch_report.h"
#include "loader/epoch_state.h"
#include "process/worker_pool.h"
#include "supervise/preflight.h"
#include "supervise/supervisor.h"

#include <mploader/batch.h>
#include <mploader/dataset.h>
#include "loader/skip_ledger.h"

#include <mploader/options.h>
#include <mploader/stats.h>

#include <memory>
#include <optional>
#include <vector>

namespace mploader::detail {

class WorkerRuntime {
 public:
  // `options` checked (options_check.h); `dataset` outlives the runtime. Sizes the slots,
  // checks this machine and starts the workers, so that whatever cannot work throws here
  // (Error, ShmError, and what the probe raises: WorkerError, WorkerCrashed, TimeoutError).
  // Workers' deaths are judged into `quarantine`, whose samples every epoch leaves out.
  WorkerRuntime(Dataset& dataset, const LoaderOptions& options,
                std::shared_ptr<Quarantine> quarantine);
  // Stops the workers; batches already delivered keep their memory.
  ~WorkerRuntime();
  WorkerRuntime(const WorkerRuntime&) = delete;
  WorkerRuntime& operator=(const WorkerRuntime&) = delete;

  // Abandons what is left of the running epoch and starts `plan`, starting the workers if
  // they were stopped.
  void start_epoch(EpochPlan plan);
  // The next batch of the epoch; nullopt at its end, when workers that do not persist stop.
  std::optional<Batch> next();

  // With num_workers = kAuto and a StreamingDataset: the split the next epoch is planned with
  // (the autotuner's count for it); nullopt otherwise.
  std::optional<int64_t> next_stream_split() const;

  // Process ids of the live workers (empty when none runs).
  std::vector<int> worker_pids() const;
  // The counters so far: those of stopped pools plus the live one's.
  LoaderStats stats() const;

 private:
  static EpochContext epoch_context(const LoaderOptions& options);
  PreflightInput preflight_input() const;
  void refuse_impossible_fd_limits() const;
  void run_preflight() const;
  void start_workers(uint64_t epoch);
  void stop_workers();
  // Ends the epoch's record and logs where its time went.
  void finish_epoch();
  // With kAuto: the autotuner's limits, after the shared memory capped the slots.
  void make_autotuner(const LoaderOptions& options, const std::string& shm_cap);
  // After each batch: feeds the autotuner and takes the step it judges.
  void autotune_step();
  bool take_step(const AutotuneVerdict& verdict);
  // Between epochs: a StreamingDataset's pending worker count takes effect.
  void apply_pending_workers();

  Dataset& dataset_;
  std::shared_ptr<Collator> collator_;
  bool persistent_workers_ = false;
  PoolConfig config_;  // the first epoch aside, every pool this runtime starts
  DispatcherSettings dispatcher_settings_;
  // Tasks in flight per worker: where prefetch_factor starts, then as the autotuner sets it;
  // each Dispatcher starts with it. Without workers it stays at the option's default.
  int64_t prefetch_factor_ = 2;
  SupervisorSettings supervisor_settings_;
  DispatcherNotices notices_;  // once-per-loader warnings, across epochs' Dispatchers
  LoaderStats stopped_stats_;
  uint64_t wait_ns_ = 0;
  uint64_t batches_taken_ = 0;
  std::unique_ptr<WorkerPool> pool_;
  std::unique_ptr<BatchSource> source_;
  Dispatcher* dispatcher_ = nullptr;  // source_, when workers run
  std::unique_ptr<Autotuner> autotune_;  // with kAuto only
  uint64_t epoch_ = 0;
  // Skipped samples of every pool and of the in-process path; the in-process source holds it.
  std::shared_ptr<SkipLedger> skips_ = std::make_shared<SkipLedger>();
  std::shared_ptr<Quarantine> quarantine_;
  EpochLedger epochs_;  // with workers only: the in-process path has no worker times

  void drain_skips() const;
};

}  // namespace mploader::detail
