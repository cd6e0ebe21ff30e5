#include "sampler/stream_sampler.h"

namespace mploader::detail {

StreamSampler::StreamSampler(const StreamingDataset& dataset, StreamPlanSettings settings)
    : dataset_(dataset), settings_(settings) {
  for (const ShardInfo& shard : dataset.shards()) shard_sizes_.push_back(shard.num_samples);
}

std::vector<std::vector<int64_t>> StreamSampler::batches(size_t, uint64_t epoch) {
  return plan(epoch, settings_.streams).batches;
}

const StreamEpoch& StreamSampler::plan(uint64_t epoch, int64_t streams) {
  if (!cached_ || cached_epoch_ != epoch || cached_streams_ != streams) {
    StreamPlanSettings s = settings_;
    s.streams = streams;
    cached_ = plan_stream_epoch(shard_sizes_, s, epoch);
    cached_epoch_ = epoch;
    cached_streams_ = streams;
  }
  return *cached_;
}

}  // namespace mploader::detail
