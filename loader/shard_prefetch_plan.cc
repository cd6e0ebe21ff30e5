// ShardPrefetchPlan (shard_prefetch_plan.h).
#include "loader/shard_prefetch_plan.h"

#include <algorithm>

namespace mploader::detail {

ShardPrefetchPlan::ShardPrefetchPlan(const StreamEpoch& plan, const StreamingDataset& dataset)
    : stream_shards_(plan.streams.size()), stream_of_batch_(plan.stream_of_batch) {
  // Per stream, which entry of its shard list each of its ranges falls in.
  std::vector<std::vector<int32_t>> position_of_unit(plan.streams.size());
  for (size_t k = 0; k < plan.streams.size(); ++k) {
    for (const SampleRange& range : plan.streams[k]) {
      const auto shard = static_cast<int64_t>(dataset.locate(range.begin).shard);
      if (stream_shards_[k].empty() || stream_shards_[k].back() != shard) {
        stream_shards_[k].push_back(shard);
      }
      position_of_unit[k].push_back(static_cast<int32_t>(stream_shards_[k].size()) - 1);
    }
  }
  shard_position_of_batch_.reserve(plan.read_unit_of_batch.size());
  for (size_t b = 0; b < plan.read_unit_of_batch.size(); ++b) {
    const auto k = static_cast<size_t>(plan.stream_of_batch[b]);
    const auto unit = static_cast<size_t>(plan.read_unit_of_batch[b]);
    shard_position_of_batch_.push_back(position_of_unit[k][unit]);
  }
}

size_t ShardPrefetchPlan::upcoming_shards(uint64_t sequence, int64_t* out, size_t n) const {
  if (sequence >= shard_position_of_batch_.size()) return 0;
  const std::vector<int64_t>& shards =
      stream_shards_[static_cast<size_t>(stream_of_batch_[sequence])];
  const auto first = static_cast<size_t>(shard_position_of_batch_[sequence]);
  const size_t count = first < shards.size() ? std::min(n, shards.size() - first) : 0;
  std::copy_n(shards.begin() + static_cast<ptrdiff_t>(first), count, out);
  return count;
}

}  // namespace mploader::detail
