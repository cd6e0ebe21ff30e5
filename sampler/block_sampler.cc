// BlockShuffleSampler (block_sampler.h): blocks of consecutive indices in a keyed order, each
// block's samples in a keyed order of their own, and each rank a contiguous run of the result.
// Every sample's place is computed from its position alone, so no permutation is stored.
// Thread-safety: indices() only reads the sampler; concurrent calls are safe.
#include "sampler/block_shuffle.h"
#include "sampler/epoch_limit.h"
#include "sampler/rank_check.h"
#include "util/errors.h"
#include "util/splitmix.h"

#include <mploader/block_sampler.h>
#include <mploader/errors.h>

#include <algorithm>
#include <string>

namespace mploader {
namespace {

constexpr const char* kWho = "BlockShuffleSampler";

// The dataset's indices as one stream, the shards in a keyed order (each shard's indices
// consecutive): the stream blocks are cut from. Without shards the stream is the indices.
class ShardStream {
 public:
  ShardStream(const std::vector<int64_t>& shard_samples, uint64_t key) {
    if (shard_samples.empty()) return;
    std::vector<int64_t> first(shard_samples.size());
    for (size_t s = 1; s < shard_samples.size(); ++s) first[s] = first[s - 1] + shard_samples[s - 1];
    const detail::KeyedPermutation order(detail::mix_seed(key, 0x5348415244ULL),
                                         shard_samples.size());
    int64_t at = 0;
    for (size_t k = 0; k < shard_samples.size(); ++k) {
      const size_t shard = order(k);
      starts_.push_back(at);
      firsts_.push_back(first[shard]);
      at += shard_samples[shard];
    }
  }
  int64_t index_at(uint64_t position) const {
    if (starts_.empty()) return static_cast<int64_t>(position);
    const auto p = static_cast<int64_t>(position);
    const size_t k = static_cast<size_t>(
        std::upper_bound(starts_.begin(), starts_.end(), p) - starts_.begin() - 1);
    return firsts_[k] + (p - starts_[k]);
  }

 private:
  std::vector<int64_t> starts_;  // where the k-th shard of the stream starts in it
  std::vector<int64_t> firsts_;  // that shard's first index
};

// One epoch's global order, a position at a time. Blocks are laid out in block order, each
// taking its own size, so only the slots after the short last block are shifted back.
class EpochOrder {
 public:
  EpochOrder(uint64_t samples, uint64_t block, uint64_t key,
             const std::vector<int64_t>& shard_samples)
      : stream_(shard_samples, key),
        samples_(samples),
        block_(block),
        blocks_((samples + block - 1) / block),
        last_size_(samples - (blocks_ - 1) * block),
        key_(key),
        block_order_(key, blocks_),
        short_slot_(find_short_slot()) {}

  // Appends the samples at global positions [begin, end), end <= the dataset's size.
  void append(uint64_t begin, uint64_t end, std::vector<int64_t>& out) const {
    while (begin < end) {
      const uint64_t slot = slot_of(begin);
      const uint64_t block = block_order_(slot);
      const uint64_t start = start_of(slot);
      const uint64_t size = block + 1 == blocks_ ? last_size_ : block_;
      const detail::KeyedPermutation within(detail::mix_seed(key_, block), size);
      const uint64_t stop = std::min(end, start + size);
      for (; begin < stop; ++begin) {
        out.push_back(stream_.index_at(block * block_ + within(begin - start)));
      }
    }
  }

 private:
  // The slot the short last block landed in; blocks_ when every block is full. KeyedPermutation
  // has no inverse, so it is searched: blocks_ steps, fewer than the epoch's samples.
  uint64_t find_short_slot() const {
    if (last_size_ == block_) return blocks_;
    for (uint64_t slot = 0; slot < blocks_; ++slot) {
      if (block_order_(slot) + 1 == blocks_) return slot;
    }
    return blocks_;  // unreachable: the order is a bijection
  }
  uint64_t start_of(uint64_t slot) const {
    return slot * block_ - (slot > short_slot_ ? block_ - last_size_ : 0);
  }
  uint64_t slot_of(uint64_t position) const {
    const uint64_t short_end = short_slot_ * block_ + last_size_;  // past the blocks' end if none
    return position >= short_end ? (position + block_ - last_size_) / block_ : position / block_;
  }

  ShardStream stream_;
  uint64_t samples_;
  uint64_t block_;
  uint64_t blocks_;
  uint64_t last_size_;
  uint64_t key_;
  detail::KeyedPermutation block_order_;
  uint64_t short_slot_;
};

}  // namespace

BlockShuffleSampler::BlockShuffleSampler(int64_t block_samples, uint64_t seed,
                                         int64_t world_size, int64_t rank, bool drop_last,
                                         std::vector<int64_t> shard_samples)
    : block_samples_(block_samples), seed_(seed), world_size_(world_size), rank_(rank),
      drop_last_(drop_last), shard_samples_(std::move(shard_samples)) {
  for (size_t s = 0; s < shard_samples_.size(); ++s) {
    if (shard_samples_[s] < 1) {
      throw OptionError("shard_samples", detail::message(
          kWho, "shard " + std::to_string(s) + " has " + std::to_string(shard_samples_[s]) +
                    " samples",
          "Give each shard's sample count, 1 or more (PackedShards::shard_sizes())"));
    }
  }
  if (block_samples_ < 1) {
    throw OptionError("block_samples",
                      detail::message(kWho, "block_samples is " + std::to_string(block_samples_),
                                      "Give 1 or more samples per block: about what the shard "
                                      "cache holds per rank (a multiple of the samples per "
                                      "shard), or the dataset's size for a full shuffle"));
  }
  detail::check_rank(kWho, world_size_, rank_);
}

void BlockShuffleSampler::check_fits(size_t dataset_size) const {
  detail::check_dataset_epoch(dataset_size, kWho);  // every rank lists its share of all of it
  int64_t total = 0;
  for (int64_t n : shard_samples_) total += n;
  if (!shard_samples_.empty() && static_cast<size_t>(total) != dataset_size) {
    throw OptionError("shard_samples", detail::message(
        kWho, "the " + std::to_string(shard_samples_.size()) + " shards given hold " +
                  std::to_string(total) + " samples, but the dataset has " +
                  std::to_string(dataset_size),
        "Give the shard sizes of this dataset (PackedShards::shard_sizes())"));
  }
}

size_t BlockShuffleSampler::num_samples(size_t dataset_size) const {
  const size_t world = static_cast<size_t>(world_size_);
  return drop_last_ ? dataset_size / world : (dataset_size + world - 1) / world;
}

std::vector<int64_t> BlockShuffleSampler::global_order(size_t dataset_size,
                                                       uint64_t epoch) const {
  check_fits(dataset_size);
  std::vector<int64_t> out;
  if (dataset_size == 0) return out;
  out.reserve(dataset_size);
  EpochOrder(dataset_size, static_cast<uint64_t>(block_samples_), detail::mix_seed(seed_, epoch),
             shard_samples_)
      .append(0, dataset_size, out);
  return out;
}

std::vector<int64_t> BlockShuffleSampler::indices(size_t dataset_size, uint64_t epoch) {
  check_fits(dataset_size);
  const uint64_t count = num_samples(dataset_size);
  std::vector<int64_t> out;
  if (count == 0) return out;
  out.reserve(count);
  const EpochOrder order(dataset_size, static_cast<uint64_t>(block_samples_),
                         detail::mix_seed(seed_, epoch), shard_samples_);
  // Positions [rank x count, (rank + 1) x count) modulo the size: padding wraps to the start,
  // more than once when there are more ranks than samples.
  uint64_t position = static_cast<uint64_t>(rank_) * count % dataset_size;
  for (uint64_t left = count; left > 0; position = 0) {
    const uint64_t run = std::min<uint64_t>(left, dataset_size - position);
    order.append(position, position + run, out);
    left -= run;
  }
  return out;
}

uint64_t BlockShuffleSampler::fingerprint() const {
  const uint64_t tag = 0x626c6f636b736872ULL;  // "blockshr": not another sampler's fingerprint
  uint64_t h = detail::mix64(detail::mix64(tag ^ static_cast<uint64_t>(block_samples_)) ^
                             uint64_t{drop_last_});
  for (int64_t n : shard_samples_) h = detail::mix64(h ^ static_cast<uint64_t>(n));
  return h;
}

int64_t BlockShuffleSampler::rank_share(size_t dataset_size, uint64_t) const {
  return static_cast<int64_t>(num_samples(dataset_size));
}

}  // namespace mploader
