// StreamSampler: the BatchSampler a Loader builds for a StreamingDataset. It plans each epoch
// with plan_stream_epoch() (plan_mixed_stream_epoch() for a StreamMixture) and keeps the last
// plan, which the loader also needs for the stream (worker) of each batch and for the
// per-shard progress of a saved state.
//
// Used by one thread (the Loader's).
#pragma once

#include "sampler/stream_mix_plan.h"
#include "sampler/stream_plan.h"

#include <mploader/sampler.h>
#include <mploader/streaming.h>

#include <memory>
#include <optional>

namespace mploader::detail {

class StreamSampler : public BatchSampler {
 public:
  // `settings.streams` is the split of a fresh epoch; `dataset` outlives the sampler.
  StreamSampler(const StreamingDataset& dataset, StreamPlanSettings settings);

  // A fresh epoch's batches, split into settings().streams.
  std::vector<std::vector<int64_t>> batches(size_t dataset_size, uint64_t epoch) override;
  size_t max_batch_size() const override { return static_cast<size_t>(settings_.batch_size); }

  // `epoch` split into `streams` per rank (a resumed epoch keeps its saved split).
  const StreamEpoch& plan(uint64_t epoch, int64_t streams) { return *plan_ptr(epoch, streams); }
  std::shared_ptr<const StreamEpoch> plan_ptr(uint64_t epoch, int64_t streams);
  int64_t fresh_streams() const { return settings_.streams; }
  // Until clear_resume(), `epoch` is planned as the rest of a job state: the samples not in
  // `delivered` (global indices), shared out over this job's ranks (elastic resume).
  void resume(uint64_t epoch, std::shared_ptr<const SequenceSet> delivered);
  void clear_resume();
  // Whether a job state can record its epochs: not those of a mixture that repeats samples.
  bool elastic() const;
  const StreamPlanSettings& settings() const { return settings_; }
  const StreamingDataset& dataset() const { return dataset_; }

 private:
  const StreamingDataset& dataset_;
  StreamPlanSettings settings_;
  std::vector<int64_t> shard_sizes_;
  std::shared_ptr<const SequenceSet> resume_delivered_;  // set by resume()
  uint64_t resume_epoch_ = 0;
  std::shared_ptr<const StreamEpoch> cached_;
  bool cached_resumed_ = false;
  uint64_t cached_epoch_ = 0;
  int64_t cached_streams_ = 0;
};

}  // namespace mploader::detail
