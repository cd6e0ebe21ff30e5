/// @file
/// BlockShuffleSampler: a shuffle for a map-style dataset whose samples are stored in shards
/// read from object storage, where a full shuffle would have every worker fetch a different
/// shard for nearly every sample. It bounds the shards in use at once and still mixes the whole
/// dataset over an epoch (MosaicML Streaming's "py1b" block shuffle). Use it as
/// LoaderOptions::sampler. For a StreamingDataset the Loader plans shards itself
/// (LoaderOptions::shuffle_buffer); this is for a plain Dataset over sharded storage.
///
/// Thread-safety: a sampler is used from one thread at a time (the Loader calls it from the
/// thread that iterates it); indices() only reads it.
#pragma once

#include <mploader/rank_agreement.h>
#include <mploader/sampler.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mploader {

/// Epoch e's order over a dataset of N samples:
///
///  0. With `shard_samples` (each shard's sample count, shards holding consecutive indices, as
///     PackedShards::shard_sizes() gives), the shards are first put in an order drawn from
///     (seed, e), and the steps below work on that stream of indices instead of 0..N-1: a
///     block then holds whole shards from all over the dataset (py1b). Give them: without,
///     a block is consecutive shards, and a dataset written in class order (an image folder
///     packed in order) gives batches of one or two classes.
///  1. The indices are cut into blocks of `block_samples` consecutive indices, block b holding
///     [b x block_samples, min((b + 1) x block_samples, N)); the last block is shorter when
///     N is not a multiple of block_samples.
///  2. The blocks are put in an order drawn from (seed, e); within each block its samples are
///     put in an order drawn from (seed, e, b). The global order is the blocks concatenated in
///     that order, each block's samples contiguous: the k-th block in the order starts at
///     position k x block_samples, or k x block_samples - (block_samples - the last block's
///     size) for a block placed after the short last block.
///  3. Rank r of world_size takes positions [r x n, (r + 1) x n) of the global order, where
///     n = ceil(N / world_size), positions past N wrapping to the start (every rank gets n, like
///     DistributedSampler's padding), or n = floor(N / world_size) with drop_last. Each rank
///     reads a contiguous run of the global order, so ranks read different blocks, and share
///     at most the block at each end of their runs.
///
/// Both orders are keyed bijections computed a sample at a time, so the sampler holds no
/// permutation of its own: its memory is the rank's list of indices (8 bytes each, and the
/// Loader's copy cut into batches), and finding where the short last block lands costs
/// N / block_samples steps per epoch; with shard_samples, 16 bytes per shard more.
///
/// Sizing: with shards of `samples_per_shard` consecutive indices, the reads of one block touch
/// at most ceil(block_samples / samples_per_shard) + 1 shards (exactly block_samples /
/// samples_per_shard when it is a multiple and shards start at index 0), and the Loader's
/// workers all read from the block the rank is in, a batch that straddles two blocks reading
/// both. So the shard cache needs to hold one block's shards per rank on the machine
/// (ceil(block_samples / samples_per_shard) + 1 shards), two blocks' worth to fetch the next
/// block while this one is read. Larger blocks mix better: a batch draws from the classes of
/// the block's shards, not the dataset's.
///
/// block_samples >= N is one block: a full shuffle of the dataset (not the same order as
/// RandomSampler's). block_samples = 1 is also a full shuffle, with no locality at all.
class BlockShuffleSampler : public Sampler, public RankedSampler {
 public:
  /// Throws OptionError naming "block_samples" (< 1), "world_size" (< 1), "rank" (outside
  /// [0, world_size)) or "shard_samples" (a count below 1; check_fits(): a sum that is not the
  /// dataset's size).
  explicit BlockShuffleSampler(int64_t block_samples, uint64_t seed = 0, int64_t world_size = 1,
                               int64_t rank = 0, bool drop_last = false,
                               std::vector<int64_t> shard_samples = {});
  /// This rank's indices in `epoch`, num_samples(dataset_size) of them. Throws OptionError
  /// ("sampler") for a dataset of more than 10^9 samples, like the other map-style samplers.
  std::vector<int64_t> indices(size_t dataset_size, uint64_t epoch) override;
  /// Throws that OptionError when the Loader is built, before any worker starts.
  void check_fits(size_t dataset_size) const override;
  /// The whole epoch's order, every rank's runs together, before padding or trimming.
  std::vector<int64_t> global_order(size_t dataset_size, uint64_t epoch) const;
  /// Indices each rank gets per epoch; the same on every rank.
  size_t num_samples(size_t dataset_size) const;
  int64_t block_samples() const { return block_samples_; }  ///< Samples per block.
  int64_t world_size() const override { return world_size_; }  ///< Ranks in the job.
  int64_t rank() const override { return rank_; }  ///< This rank, in [0, world_size).
  uint64_t seed() const override { return seed_; }  ///< Epoch e's orders are drawn from it.
  /// Of block_samples and drop_last, not the seed (agreed on apart): equal on ranks that agree.
  uint64_t fingerprint() const override;
  /// num_samples(dataset_size): the indices each rank gets in every epoch.
  int64_t rank_share(size_t dataset_size, uint64_t epoch) const override;

 private:
  int64_t block_samples_;
  uint64_t seed_;
  int64_t world_size_;
  int64_t rank_;
  bool drop_last_;
  std::vector<int64_t> shard_samples_;  // empty: the indices in order are the stream
};

}  // namespace mploader
