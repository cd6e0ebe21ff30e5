#include "sampler/stream_sampler.h"

namespace mploader::detail {

StreamSampler::StreamSampler(const StreamingDataset& dataset, StreamPlanSettings settings)
    : dataset_(dataset), settings_(settings) {
  for (const ShardInfo& shard : dataset.shards()) shard_sizes_.push_back(shard.num_samples);
}

std::vector<std::vector<int64_t>> StreamSampler::batches(size_t, uint64_t epoch) {
  const StreamEpoch& p = plan(epoch, settings_.streams);
  std::vector<std::vector<int64_t>> out;
  for (size_t b = 0; b < p.size(); ++b) out.push_back(p.batch(b));
  return out;
}

std::shared_ptr<const StreamEpoch> StreamSampler::plan_ptr(uint64_t epoch, int64_t streams) {
  const bool resumed = resume_delivered_ != nullptr && resume_epoch_ == epoch;
  if (!cached_ || cached_epoch_ != epoch || cached_streams_ != streams ||
      cached_resumed_ != resumed) {
    StreamPlanSettings s = settings_;
    s.streams = streams;
    if (const StreamMixSpec* mix = dataset_.stream_mix()) {
      SourceRanges sources = mixture_sources(shard_sizes_, *mix, s, epoch);
      if (resumed) sources = remaining_of_sources(sources, *resume_delivered_);
      cached_ = std::make_shared<StreamEpoch>(
          plan_mixed_stream_epoch(sources, *mix, s, epoch, resumed));
    } else {
      cached_ = std::make_shared<StreamEpoch>(
          resumed ? plan_resumed_stream_epoch(
                        remaining_in_read_order(shard_sizes_, s, epoch, *resume_delivered_), s,
                        epoch)
                  : plan_stream_epoch(shard_sizes_, s, epoch));
    }
    cached_epoch_ = epoch;
    cached_streams_ = streams;
    cached_resumed_ = resumed;
  }
  return cached_;
}

void StreamSampler::resume(uint64_t epoch, std::shared_ptr<const SequenceSet> delivered) {
  resume_epoch_ = epoch;
  resume_delivered_ = std::move(delivered);
  cached_.reset();  // another job state of the same epoch plans otherwise
}

void StreamSampler::clear_resume() { resume_delivered_.reset(); }

bool StreamSampler::elastic() const {
  const StreamMixSpec* mix = dataset_.stream_mix();
  return mix == nullptr || mix->end == MixtureEnd::kFirstExhausted;
}

}  // namespace mploader::detail
