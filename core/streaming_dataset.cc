#include <mploader/streaming.h>

#include "util/fnv1a.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace mploader {

void StreamingDataset::declare_shards(std::vector<ShardInfo> shards) {
  std::vector<int64_t> starts;
  starts.reserve(shards.size());
  int64_t total = 0;
  for (size_t i = 0; i < shards.size(); ++i) {
    const int64_t n = shards[i].num_samples;
    if (n < 0) {
      throw std::invalid_argument("mploader: shard " + std::to_string(i) + " ('" +
                                  shards[i].name + "') declares " + std::to_string(n) +
                                  " samples; a shard holds 0 or more");
    }
    if (n > std::numeric_limits<int64_t>::max() - total) {
      throw std::invalid_argument("mploader: the shards' sample counts overflow int64 at shard " +
                                  std::to_string(i) + " ('" + shards[i].name + "')");
    }
    starts.push_back(total);
    total += n;
  }
  shards_ = std::move(shards);
  starts_ = std::move(starts);
  total_ = total;
}

ShardPosition StreamingDataset::locate(int64_t index) const {
  if (index < 0 || index >= total_) {
    throw std::out_of_range("mploader: sample " + std::to_string(index) +
                            " is outside the streaming dataset's " + std::to_string(total_) +
                            " samples");
  }
  // The last shard starting at or before `index` that holds samples (empty shards share
  // their start with the next one).
  auto it = std::upper_bound(starts_.begin(), starts_.end(), index);
  size_t shard = static_cast<size_t>(it - starts_.begin()) - 1;
  while (shards_[shard].num_samples == 0) --shard;  // cannot pass shard 0: index >= 0 holds
  return ShardPosition{shard, index - starts_[shard]};
}

int64_t StreamingDataset::global_index(size_t shard, int64_t sample) const {
  if (shard >= shards_.size() || sample < 0 || sample >= shards_[shard].num_samples) {
    throw std::out_of_range("mploader: there is no sample " + std::to_string(sample) +
                            " in shard " + std::to_string(shard) + " of " +
                            std::to_string(shards_.size()));
  }
  return starts_[shard] + sample;
}

uint64_t StreamingDataset::corpus_fingerprint() const {
  detail::Fnv1a h;
  for (const ShardInfo& s : shards_) {
    h.add(s.name);
    h.add_byte(0);
    h.add(static_cast<uint64_t>(s.num_samples));
  }
  return h.value();
}

}  // namespace mploader
