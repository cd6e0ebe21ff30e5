#include <mploader/streaming.h>

#include "util/errors.h"
#include "util/fnv1a.h"

#include <mploader/errors.h>

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
      throw OptionError("shards", detail::message("StreamingDataset::declare_shards",
                                                  "shard " + std::to_string(i) + " ('" +
                                                      shards[i].name + "') declares " +
                                                      std::to_string(n) + " samples",
                                                  "Declare 0 samples or more for each shard"));
    }
    if (n > std::numeric_limits<int64_t>::max() - total) {
      throw OptionError("shards", detail::message("StreamingDataset::declare_shards",
                                                  "the shards' sample counts overflow int64 at "
                                                  "shard " + std::to_string(i) + " ('" +
                                                      shards[i].name + "')",
                                                  "Declare each shard's own count of samples"));
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
    throw OptionError("index", detail::message("StreamingDataset::locate",
                                               "sample " + std::to_string(index) +
                                                   " is outside the streaming dataset's " +
                                                   std::to_string(total_) + " samples",
                                               "Give an index from 0 to size() - 1"));
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
    throw OptionError("sample", detail::message("StreamingDataset::global_index",
                                                "there is no sample " + std::to_string(sample) +
                                                    " in shard " + std::to_string(shard) +
                                                    " of " + std::to_string(shards_.size()),
                                                "Give a shard below the shard count and a "
                                                "sample below that shard's num_samples"));
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
