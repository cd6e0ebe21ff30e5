// ElasticEpochs: the part of a Loader's epoch bookkeeping that lets its states resume on another
// number of ranks (include/mploader/elastic.h). It knows the running epoch's samples as
// positions in the job's global order, so that a state can say which positions this rank
// delivered, and it plans a map-style epoch's rest from a job state. A StreamingDataset's rest
// is planned by its StreamSampler (resume()); positions there are the global sample indices.
//
// Used by one thread (the Loader's), through EpochState.
#pragma once

#include "loader/job_state.h"
#include "loader/resume_state.h"
#include "sampler/elastic_plan.h"
#include "sampler/stream_sampler.h"

#include <mploader/dataset.h>
#include <mploader/elastic_sampler.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace mploader::detail {

class ElasticEpochs {
 public:
  // `map` is the map-style sampler when it is an ElasticSampler, `stream` the sampler of a
  // StreamingDataset; with neither, enabled() is false and states carry no elastic part.
  ElasticEpochs(const ElasticSampler* map, StreamSampler* stream, const Dataset& dataset);

  bool enabled() const { return map_ != nullptr || (stream_ != nullptr && stream_->elastic()); }
  int64_t world_size() const;
  int64_t rank() const;

  // Throws OptionError("state") naming the fix when `job` is not of this loader's data and
  // order (the settings then and now name what differs).
  void check_job(const JobState& job, const RecordedSettings& now) const;
  // Makes the stream sampler plan `job`'s epoch as its rest (streams only).
  void prepare(const JobState& job);
  // A map-style epoch's rest after `job`: batches of dataset indices and their positions.
  // `batch_size` and `drop_last` cut them. Throws OptionError when fewer samples remain than
  // ranks.
  struct MapRest {
    std::vector<std::vector<int64_t>> batches;
    std::vector<int64_t> rank_positions;
    std::vector<uint64_t> batch_start;
    ResumedBatches report;
  };
  MapRest map_rest(const JobState& job, int64_t batch_size, bool drop_last) const;
  // A fresh epoch with `batches` (this rank's) started: its positions, and no base.
  // `drop_last`: the Loader left out a last batch shorter than `batch_size`, whose positions
  // then count as not delivered (a resumed epoch delivers them).
  void started_fresh(uint64_t epoch, const std::vector<std::vector<int64_t>>& batches,
                     int64_t batch_size, bool drop_last);
  // The epoch resumed from `job` started: `rest` is map_rest()'s (map-style), else `stream` is
  // the stream sampler's plan of it (after prepare()).
  void started_resumed(const JobState& job, MapRest* rest, const StreamEpoch* stream);
  // A fresh epoch left: plans from now on are fresh.
  void forget_job();

  // The running epoch's progress: `stream` is its plan (a StreamingDataset's; else null),
  // `delivered` the sequences of its batches that the training loop received.
  // nullopt when the sampler's positions did not match its batches (it warned).
  std::optional<ElasticProgress> running(const StreamEpoch* stream,
                                         const SequenceSet& delivered) const;
  // An epoch not started: nothing delivered, or all that `job` says when it is pending.
  ElasticProgress upcoming(const JobState* job) const;

 private:
  uint64_t order() const;
  uint64_t positions() const { return dataset_.size(); }

  const ElasticSampler* map_;
  StreamSampler* stream_;
  const Dataset& dataset_;
  bool positions_known_ = false;       // map-style: the running epoch's positions are below
  std::vector<int64_t> rank_positions_;  // map-style: this rank's positions, batch by batch
  std::vector<uint64_t> batch_start_;    // map-style: where each batch's positions begin
  uint64_t base_ = 0;                    // the job state the running epoch resumed from
  std::shared_ptr<const SequenceSet> base_delivered_;
};

}  // namespace mploader::detail
