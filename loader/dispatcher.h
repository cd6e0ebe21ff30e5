// Dispatcher: hands index batches to workers and turns their results into Batches.
//
// Each worker has at most prefetch_factor tasks in flight. A new task goes to the worker with
// the fewest in flight, so one slow worker does not take more than its share. Results are
// received through poll() on every worker's done-eventfd and pidfd at once: a worker that dies
// is noticed while the loop waits, not after a timeout. With in_order, results wait in a
// reorder buffer until their turn.
//
// The dispatcher owns the one record of work in flight (InFlightTable) and the Supervisor that
// watches the workers and reads that record when one dies. A dead or hung worker is reported
// by the Supervisor; with max_restarts_per_epoch it is
// replaced and its batches are issued again, so every index still arrives exactly once. With
// quarantine_after, a sample the deaths name often enough is left out of every batch not yet
// received (a batch left with none is skipped) and the restarts it cost are given back.
//
// Used by one thread (the Loader's).
#pragma once

#include "loader/batch_source.h"
#include "loader/shard_prefetch_plan.h"
#include "loader/skip_ledger.h"
#include "supervise/supervisor.h"
#include "process/worker_pool.h"

#include <chrono>
#include <deque>
#include <exception>
#include <map>
#include <optional>

namespace mploader::detail {

// Warnings logged once per Loader; the Loader keeps these across the Dispatchers of its epochs.
struct DispatcherNotices {
  bool batch_too_large = false;   // a batch did not fit its slot
  bool copying_overflow = false;  // too many overflow segments mapped: copying them
};

// The options a Dispatcher reads. Not prefetch_factor: the autotuner changes it, so the runtime
// holds it and hands it to each Dispatcher (the constructor, set_prefetch_factor()).
struct DispatcherSettings {
  bool in_order = true;
  std::chrono::milliseconds timeout{0};  // for one batch; 0 waits forever
  int64_t max_restarts_per_epoch = 0;
  uint64_t max_batch_bytes = 0;  // named in the warning about a batch larger than its slot
};

class Dispatcher : public BatchSource {
 public:
  // Starts supervising the pool's workers (the Supervisor's thread) until destroyed, with up
  // to `prefetch_factor` tasks in flight per worker. Samples left out by the quarantine
  // (supervision.quarantine) are reported to `skips`.
  Dispatcher(WorkerPool& pool, const DispatcherSettings& settings, int64_t prefetch_factor,
             const SupervisorSettings& supervision, DispatcherNotices& notices,
             std::shared_ptr<SkipLedger> skips);
  void start_epoch(std::shared_ptr<const BatchList> batches, uint64_t epoch) override;
  std::optional<Batch> next() override;
  uint64_t head_of_line_ns() const override { return head_of_line_ns_; }
  void add_memory(LoaderStats& stats) const override;

  // The autotuner's levers, between batches. Every index is still delivered once, in order:
  // tasks go only to workers that take new ones, and one being removed keeps its tasks until
  // they come back. With streams (a StreamingDataset), call them between epochs only.
  //
  // Starts a process in the first parked worker slot (or keeps the one being removed);
  // false when every slot runs.
  bool add_worker();
  // Takes no more tasks to the last running worker, and parks it once its tasks are back;
  // false when one is being removed already or one would be left with none.
  bool remove_worker();
  // Workers that take new tasks: running and not being removed.
  size_t taking_tasks() const { return issuable_.size(); }
  int64_t prefetch_factor() const { return prefetch_factor_; }
  // At most the descriptors each region has (PoolConfig::num_descriptors).
  void set_prefetch_factor(int64_t prefetch_factor);
  // The shards each batch's stream reads from then on, sent with the batch (null: none); set
  // it before start_epoch().
  void set_prefetch_plan(std::shared_ptr<const ShardPrefetchPlan> plan) {
    prefetch_plan_ = std::move(plan);
  }

 private:
  struct WorkerState {
    std::vector<uint32_t> free_descriptors;
    bool warned_overflow = false;
  };
  // A result waiting for its turn: a batch, or the error that replaces it.
  struct Ready {
    std::optional<Batch> batch;
    std::exception_ptr error;
  };

  void issue_tasks();
  void refresh_issuable();
  // Parks the worker being removed once it holds no task.
  void settle_removal();
  std::optional<uint64_t> next_to_issue() const;
  bool issue_one(uint64_t sequence, const std::vector<int64_t>& indices, bool require_slot);
  void send_task(size_t worker, bool slot_promised, uint64_t sequence,
                 const std::vector<int64_t>& indices);
  void mark_issued(uint64_t sequence);
  // A batch the quarantine left empty: counted as delivered, nothing to deliver.
  void settle_empty(uint64_t sequence);
  std::optional<Ready> take_ready();
  void wait_for_results(std::chrono::steady_clock::time_point deadline);
  void receive_from(size_t worker);
  void handle_result(size_t worker, uint32_t id);
  std::optional<Batch> build_batch(size_t worker, const InFlightTask& f, uint32_t id);
  uint32_t adopt_popped_slot(size_t worker, const InFlightTask& f, uint32_t id);
  void settle_unused_slot(size_t worker, const InFlightTask& f, uint32_t id);
  // A batch that arrived in a one-off segment (too big for its slot, or sent without one).
  Batch build_overflow_batch(size_t worker, const InFlightTask& f, uint32_t id,
                             std::vector<int64_t> indices);
  std::exception_ptr error_for(size_t worker, uint32_t id, const InFlightTask& f);
  // A worker died: restart it if allowed, else fail the loader with its report.
  void worker_died(size_t worker);
  // No batch within the timeout: the worker owing the awaited batch is reported as hung.
  void timed_out();
  void restart_or_fail(size_t worker, const DeathRecord& record, bool hang);
  // `counted`: against max_restarts_per_epoch (a death on a quarantined sample is not).
  void restart_worker(size_t worker, bool counted);
  void quarantine_and_restart(size_t worker, const QuarantineVerdict& verdict);
  // Takes `index` out of every batch not yet received, each time reported skipped.
  void leave_out_everywhere(int64_t index);
  std::string describe_batch(uint64_t sequence) const;
  // Positions index batches_; Batch::sequence() and messages use the full plan's sequence.
  uint64_t plan_sequence(uint64_t position) const { return batches_->sequence(position); }
  size_t batch_count() const { return batches_ ? batches_->size() : 0; }

  WorkerPool& pool_;
  DispatcherSettings settings_;
  InFlightTable in_flight_;  // before supervisor_, which reads it until it is destroyed
  Supervisor supervisor_;
  DispatcherNotices& notices_;
  std::vector<WorkerState> workers_;
  std::vector<size_t> issuable_;   // running, not being removed, in slot order
  std::optional<size_t> removing_;  // the worker remove_worker() drains
  int64_t prefetch_factor_ = 2;  // tasks in flight per worker
  size_t next_worker_hint_ = 0;
  uint64_t generation_ = 0;
  uint64_t epoch_ = 0;
  std::shared_ptr<const BatchList> batches_;
  bool streamed_ = false;  // the batches have streams: each goes to its stream's worker
  std::shared_ptr<const ShardPrefetchPlan> prefetch_plan_;  // null: nothing to prefetch
  size_t next_issue_ = 0;
  std::deque<uint64_t> reissue_;  // batches of a dead worker, issued again first
  int64_t restarts_this_epoch_ = 0;
  uint64_t replacements_ = 0;  // workers restarted, counted against the limit or not
  std::map<int64_t, int64_t> restarts_by_sample_;  // this epoch's, given back at quarantine
  SequenceSet received_;  // positions whose result (or empty batch) came back
  std::shared_ptr<Quarantine> quarantine_;  // null: none
  std::shared_ptr<SkipLedger> skips_;
  size_t next_deliver_ = 0;  // in_order: next sequence due; otherwise batches delivered
  std::map<uint64_t, Ready> reorder_;
  std::deque<Ready> unordered_;
  std::exception_ptr broken_;  // a dead worker makes the loader unusable
  uint64_t head_of_line_ns_ = 0;
};

}  // namespace mploader::detail
