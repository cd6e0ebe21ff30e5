// ShardPrefetchPlan: for each batch of a StreamingDataset's epoch, the shards its stream reads
// from then on. Sent with the batch to its worker (TaskDescriptor::upcoming_shards), so that a
// dataset whose shards come from a slow store fetches them while it reads the current one.
//
// Immutable once built; shared by the loader's thread and its dispatcher.
#pragma once

#include "sampler/stream_plan.h"

#include <mploader/streaming.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace mploader::detail {

class ShardPrefetchPlan {
 public:
  ShardPrefetchPlan(std::shared_ptr<const StreamEpoch> plan, const StreamingDataset& dataset);

  // Writes up to `n` shards of the stream of batch `sequence` (its place in the epoch's full
  // plan) to `out`, in read order: the one its reader has reached once the batch is read, then
  // those after it. Returns how many. Repeated shards side by side (a shard split into sample
  // ranges) are named once.
  size_t upcoming_shards(uint64_t sequence, int64_t* out, size_t n) const;

 private:
  std::shared_ptr<const StreamEpoch> plan_;
  std::vector<std::vector<int64_t>> stream_shards_;  // per stream: its shards in read order
  // Per stream, per range: the index into stream_shards_ of its shard.
  std::vector<std::vector<int32_t>> shard_position_of_unit_;
};

}  // namespace mploader::detail
