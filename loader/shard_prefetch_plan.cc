// ShardPrefetchPlan (shard_prefetch_plan.h).
#include "loader/shard_prefetch_plan.h"

#include <algorithm>

namespace mploader::detail {

ShardPrefetchPlan::ShardPrefetchPlan(std::shared_ptr<const StreamEpoch> plan,
                                     const StreamingDataset& dataset)
    : plan_(std::move(plan)), stream_shards_(plan_->streams.size()),
      shard_position_of_unit_(plan_->streams.size()) {
  for (size_t k = 0; k < plan_->streams.size(); ++k) {
    for (const SampleRange& range : plan_->streams[k]) {
      const auto shard = static_cast<int64_t>(dataset.locate(range.begin).shard);
      if (stream_shards_[k].empty() || stream_shards_[k].back() != shard) {
        stream_shards_[k].push_back(shard);
      }
      shard_position_of_unit_[k].push_back(static_cast<int32_t>(stream_shards_[k].size()) - 1);
    }
  }
}

size_t ShardPrefetchPlan::upcoming_shards(uint64_t sequence, int64_t* out, size_t n) const {
  if (sequence >= plan_->size()) return 0;
  const auto k = static_cast<size_t>(plan_->stream_of(sequence));
  const auto unit = static_cast<size_t>(plan_->read_unit_of(sequence));
  const std::vector<int64_t>& shards = stream_shards_[k];
  const auto first = static_cast<size_t>(shard_position_of_unit_[k][unit]);
  const size_t count = first < shards.size() ? std::min(n, shards.size() - first) : 0;
  std::copy_n(shards.begin() + static_cast<ptrdiff_t>(first), count, out);
  return count;
}

}  // namespace mploader::detail
