// KeyedPermutation and BlockShuffle (block_shuffle.h).
#include "sampler/block_shuffle.h"

#include <algorithm>

namespace mploader::detail {

KeyedPermutation::KeyedPermutation(uint64_t key, uint64_t size) : size_(size) {
  while (half_bits_ < 32 && (uint64_t{1} << (2 * half_bits_)) < size_) ++half_bits_;
  half_mask_ = (uint64_t{1} << half_bits_) - 1;
  for (int r = 0; r < kRounds; ++r) key = keys_[r] = splitmix64(key + static_cast<uint64_t>(r));
}

// A balanced Feistel network over 2 x half_bits_ bits: a bijection for any round function.
uint64_t KeyedPermutation::encrypt(uint64_t x) const {
  uint64_t left = x >> half_bits_;
  uint64_t right = x & half_mask_;
  for (uint64_t k : keys_) {
    const uint64_t next = left ^ (mix64(right ^ k) & half_mask_);
    left = right;
    right = next;
  }
  return (left << half_bits_) | right;
}

// Cycle walking: the network permutes a domain under 4 x size_, so values past size_ are
// passed through it again; each walk ends within size_, and distinct inputs stay distinct.
uint64_t KeyedPermutation::operator()(uint64_t i) const {
  if (size_ <= 1) return i;
  do {
    i = encrypt(i);
  } while (i >= size_);
  return i;
}

BlockShuffle::BlockShuffle(int64_t samples, int64_t block, uint64_t key)
    : samples_(samples), block_(std::max<int64_t>(1, block)), key_(key) {}

int64_t BlockShuffle::read_of(int64_t output) const {
  if (block_ <= 1) return output;
  const int64_t start = output / block_ * block_;
  const int64_t size = std::min(block_, samples_ - start);
  const KeyedPermutation within(mix_seed(key_, static_cast<uint64_t>(start / block_)),
                                static_cast<uint64_t>(size));
  return start + static_cast<int64_t>(within(static_cast<uint64_t>(output - start)));
}

int64_t BlockShuffle::reads_done(int64_t output_end) const {
  if (output_end <= 0) return 0;
  const int64_t block_end = (output_end + block_ - 1) / block_ * block_;
  return std::min(samples_, block_end);
}

std::vector<int64_t> block_shuffle(const std::vector<int64_t>& in, int64_t block, uint64_t key) {
  const BlockShuffle order(static_cast<int64_t>(in.size()), block, key);
  std::vector<int64_t> out(in.size());
  for (size_t o = 0; o < in.size(); ++o) {
    out[o] = in[static_cast<size_t>(order.read_of(static_cast<int64_t>(o)))];
  }
  return out;
}

}  // namespace mploader::detail
