// The shuffle within a stream of a StreamingDataset: the stream's reads are cut into blocks of
// LoaderOptions::shuffle_buffer samples and each block is let out in a seeded random order. A
// sample's place is computed alone, in constant time and memory (a keyed Feistel network
// walked over the block's size), so an epoch of a trillion samples is planned without
// holding one index, and any batch of it is found without the ones before it.
//
// Pure functions and an immutable value type.
#pragma once

#include "util/splitmix.h"

#include <cstdint>
#include <vector>

namespace mploader::detail {

// A bijection on [0, size), chosen by `key`.
class KeyedPermutation {
 public:
  KeyedPermutation(uint64_t key, uint64_t size);
  uint64_t operator()(uint64_t i) const;

 private:
  uint64_t encrypt(uint64_t x) const;

  static constexpr int kRounds = 6;
  uint64_t size_ = 0;
  unsigned half_bits_ = 0;  // the network permutes [0, 4^half_bits_), the least >= size_
  uint64_t half_mask_ = 0;
  uint64_t keys_[kRounds] = {};
};

// How a stream of `samples` reads is let out: output `o` is read `read_of(o)`.
class BlockShuffle {
 public:
  // `block` <= 1: in read order. `key` picks the order (one per stream and epoch).
  BlockShuffle(int64_t samples, int64_t block, uint64_t key);
  int64_t read_of(int64_t output) const;
  // Once outputs [0, output_end) are out, the reads the stream has made: the end of the block
  // of the last of them.
  int64_t reads_done(int64_t output_end) const;
  int64_t block() const { return block_; }
  uint64_t key() const { return key_; }

 private:
  int64_t samples_ = 0;
  int64_t block_ = 1;
  uint64_t key_ = 0;
};

// `in` let out as BlockShuffle(in.size(), block, key) says.
std::vector<int64_t> block_shuffle(const std::vector<int64_t>& in, int64_t block, uint64_t key);

}  // namespace mploader::detail
