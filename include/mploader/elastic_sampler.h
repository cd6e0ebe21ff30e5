/// @file
/// ElasticSampler: a sampler whose ranks share out one global order per epoch, the same for any
/// number of ranks, so that a Loader over it saves states that resume on another world size
/// (elastic.h says how). DistributedSampler and the bucket samplers are ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mploader {

/// One epoch's order for the whole job, the same for any number of ranks.
struct GlobalOrder {
  std::vector<int64_t> indices;  ///< The sample at each position.
  /// Empty: batches may be cut anywhere. Otherwise the end of each group of positions that the
  /// sampler keeps together as one batch (a bucket sampler's batch), ascending, the last one
  /// indices.size().
  std::vector<int64_t> group_ends;
};

/// A sampler (LoaderOptions::sampler or batch_sampler) whose ranks share out one global order per
/// epoch: a Loader over it saves states that merge_loader_states() turns into a job state.
/// DistributedSampler and the bucket samplers are ones. Called from the Loader's thread.
class ElasticSampler {
 public:
  virtual ~ElasticSampler() = default;
  /// The epoch's global order over a dataset of `dataset_size` samples.
  virtual GlobalOrder global_order(size_t dataset_size, uint64_t epoch) const = 0;
  /// This rank's samples in `epoch` as positions in global_order(), in the order its batches
  /// (or its indices, cut by batch_size) hold them; a repeated (padded) sample repeats its
  /// position.
  virtual std::vector<int64_t> rank_positions(size_t dataset_size, uint64_t epoch) const = 0;
  /// Of everything but the epoch that decides the global order (seed, shuffle, lengths and
  /// budgets), and of nothing else: not the world size or the rank.
  virtual uint64_t order_fingerprint() const = 0;
  virtual int64_t world_size() const = 0;  ///< Ranks in the job.
  virtual int64_t rank() const = 0;        ///< This rank, in [0, world_size).
};

}  // namespace mploader
