// EpochState: which epoch a Loader runs next and which batches of the running one the
// training loop has received. What state_dict() saves and load_state_dict() restores; it plans
// each epoch (the sampler's batches, less those a loaded state says were received) but runs
// nothing: the loader hands the plan to its batch source.
//
// Used by one thread (the Loader's).
#pragma once

#include "loader/batch_list.h"
#include "loader/elastic_epoch.h"
#include "loader/job_state.h"
#include "loader/resume_state.h"
#include "loader/shard_prefetch_plan.h"
#include "sampler/stream_sampler.h"
#include "supervise/quarantine.h"

#include <mploader/batch.h>
#include <mploader/dataset.h>
#include <mploader/sampler.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace mploader::detail {

// The batches of one epoch to run: the whole plan, or a resumed epoch's rest (each batch then
// knows its sequence in the whole plan, and, for a StreamingDataset, its stream).
struct EpochPlan {
  uint64_t epoch = 0;
  std::shared_ptr<const BatchList> batches;
  // StreamingDataset: the shards each batch's stream reads from then on. Null: none.
  std::shared_ptr<const ShardPrefetchPlan> prefetch;
};

class EpochState {
 public:
  // `settings` are recorded in every state, to name what changed when one is refused.
  // `stream` is the sampler itself when the dataset is a StreamingDataset, else null.
  // `quarantine`'s samples are saved in every state, and a loaded state's join it.
  // `elastic` is the map-style sampler when it is an ElasticSampler: states then resume on
  // other world sizes too (a StreamingDataset's always do).
  EpochState(std::shared_ptr<BatchSampler> sampler, const Dataset& dataset,
             RecordedSettings settings, std::shared_ptr<Quarantine> quarantine,
             std::shared_ptr<StreamSampler> stream = nullptr,
             const ElasticSampler* elastic = nullptr);

  // The epoch of the current (or last) iteration.
  uint64_t epoch() const { return epoch_; }
  // The epoch the next iteration runs, and how many batches it has.
  uint64_t upcoming_epoch() const;
  size_t upcoming_batches() const;
  bool running() const { return running_; }

  // Plans the upcoming epoch; the caller starts it and then calls started(). Throws
  // OptionError for a plan the sampler got wrong (the epoch then ends with that error: see
  // take_refusal()) and for a loaded state whose plan the sampler no longer gives.
  EpochPlan plan_upcoming();
  void started() { running_ = true; }
  // True once after an epoch whose plan was refused: that epoch is over.
  bool take_refusal();
  // The training loop received `batch` of the running epoch.
  void received(const Batch& batch);
  // The running epoch delivered its last batch.
  void finished() { running_ = false; }

  // The epoch the next batch continues (a running one, even if all its batches were received)
  // or starts, and what of it was received.
  ResumeState state() const;
  // state(), with `ahead` (returned by the loader, not yet given to the training loop) counted
  // as not received.
  ResumeState state_without(const Batch& ahead) const;
  // Makes the next iteration run the saved epoch's remaining batches: of this rank's state, or
  // of a job state on any world size. Throws OptionError.
  void load(const std::string& text);
  // set_epoch(): the next iteration runs `epoch`; a loaded state of another epoch is dropped.
  void request(uint64_t epoch);

  // The split a fresh epoch of a StreamingDataset is planned with from now on (the
  // autotuner's worker count); a resumed epoch keeps its saved one.
  void set_fresh_streams(int64_t streams) { fresh_streams_ = streams; }

 private:
  std::shared_ptr<const BatchList> plan_of(uint64_t epoch) const;
  // The stream split that `epoch` is planned with now: a loaded state's, else a fresh one.
  int64_t streams_for(uint64_t epoch) const;
  // The stream part of a state of `epoch` with `delivered` batches.
  std::optional<StreamProgress> stream_progress(uint64_t epoch,
                                                const SequenceSet& delivered) const;
  void attach_prefetch(EpochPlan& plan) const;
  void load_job(JobState job);
  // The next iteration runs `epoch`, with these samples quarantined.
  void resume_at(uint64_t epoch, const std::vector<QuarantinedSample>& quarantined);
  std::optional<ElasticProgress> running_elastic(const SequenceSet& delivered) const;
  // The job state's epoch, resumed on this rank: its plan, started.
  EpochPlan plan_job();
  void drop_job();

  std::shared_ptr<BatchSampler> sampler_;
  std::shared_ptr<StreamSampler> stream_;
  std::shared_ptr<Quarantine> quarantine_;
  int64_t running_streams_ = 0;  // the split of the running epoch (stream_ only)
  std::optional<int64_t> fresh_streams_;  // set_fresh_streams(); else the sampler's
  const Dataset& dataset_;
  RecordedSettings settings_;
  std::optional<uint64_t> requested_epoch_;
  std::optional<ResumeState> resume_;  // loaded, applied by the next plan_upcoming()
  std::optional<JobState> job_;        // loaded, applied by the next plan_upcoming()
  ElasticEpochs elastic_;
  PlanFingerprint plan_;               // of the epoch running (or last run)
  SequenceSet delivered_;        // by sequence, of that epoch
  uint64_t epoch_ = 0;
  bool started_any_ = false;
  bool running_ = false;
  bool refused_ = false;  // the last epoch's plan was invalid: it ended with an OptionError
};

// Each stream's progress in `plan`'s epoch, from the batches `delivered` (by sequence): runs of
// fully delivered units and the units partly delivered, so that a state stays small for any
// number of shards.
std::vector<StreamPartProgress> progress_of_streams(const StreamingDataset& data,
                                                    const StreamEpoch& plan,
                                                    const SequenceSet& delivered);

}  // namespace mploader::detail
