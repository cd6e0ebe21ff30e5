/// @file
/// Samplers that share each epoch's indices out across the ranks of a data-parallel job, so
/// that every rank gets the same number: DistributedSampler (PyTorch's, index for index) and
/// DistributedWeightedSampler. Use one as LoaderOptions::sampler. For batches bucketed by
/// length see mploader/bucket_sampler.h; to check that ranks agree, mploader/rank_agreement.h.
///
/// Thread-safety: a sampler is used from one thread at a time (the Loader calls it from the
/// thread that iterates it).
#pragma once

#include <mploader/elastic_sampler.h>
#include <mploader/rank_agreement.h>
#include <mploader/sampler.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mploader {

/// Rank r of world_size takes indices[r::world_size] of one epoch's order, exactly as
/// torch.utils.data.DistributedSampler does for the same arguments: the order is
/// torch.randperm(n, generator seeded seed + epoch) when shuffle, else 0..n-1; without drop_last
/// it is padded to a multiple of world_size by repeating it from the start (more than once when
/// world_size > n); with drop_last its tail is cut to a multiple. seed + epoch wraps at 2^64.
/// Use it as LoaderOptions::sampler; batch_size and drop_last then cut this rank's indices.
class DistributedSampler : public Sampler, public RankedSampler, public ElasticSampler {
 public:
  /// Throws OptionError naming "world_size" (< 1) or "rank" (outside [0, world_size)).
  DistributedSampler(int64_t world_size, int64_t rank, bool shuffle = true, uint64_t seed = 0,
                     bool drop_last = false);
  std::vector<int64_t> indices(size_t dataset_size, uint64_t epoch) override;
  /// Indices this rank gets per epoch (PyTorch's num_samples); the same on every rank.
  size_t num_samples(size_t dataset_size) const;
  int64_t world_size() const override { return world_size_; }  ///< Ranks in the job.
  int64_t rank() const override { return rank_; }  ///< This rank, in [0, world_size).
  uint64_t seed() const override { return seed_; }  ///< Epoch e shuffles with seed + e.
  /// num_samples(dataset_size): the indices each rank gets in every epoch.
  int64_t rank_share(size_t dataset_size, uint64_t epoch) const override;
  /// The epoch's order before padding or trimming: the permutation, or 0..n-1.
  GlobalOrder global_order(size_t dataset_size, uint64_t epoch) const override;
  /// Positions r, r + world_size, ... of global_order(), a padded one wrapping to the start.
  std::vector<int64_t> rank_positions(size_t dataset_size, uint64_t epoch) const override;
  /// Of shuffle and the seed.
  uint64_t order_fingerprint() const override;

 private:
  int64_t world_size_;
  int64_t rank_;
  bool shuffle_;
  uint64_t seed_;
  bool drop_last_;
};

/// A weighted sampler for data-parallel jobs (PyTorch has none: pytorch/pytorch#77154). Every
/// rank draws the same global sample of num_samples() x world_size indices, with probability
/// proportional to `weights` (one per sample), and rank r takes every world_size-th index from
/// position r, so every rank gets exactly num_samples() indices. Without replacement the global
/// draw holds each index at most once, so the ranks' indices are disjoint. The draw is
/// torch.multinomial(weights, num_samples x world_size, replacement) with a generator seeded
/// seed + epoch, so rank r's indices are PyTorch's WeightedRandomSampler's [r::world_size].
/// Use it as LoaderOptions::sampler.
class DistributedWeightedSampler : public Sampler, public RankedSampler {
 public:
  /// `num_samples` per rank per epoch; 0 takes the default: ceil(len(weights) / world_size)
  /// with replacement (DistributedSampler's count), floor(positive weights / world_size)
  /// without (the most that stays disjoint and equal on every rank). Throws OptionError for a
  /// bad world_size or rank, and what WeightedRandomSampler refuses of num_samples x world_size
  /// (all ranks' draws; 0 without replacement: fewer positive weights than ranks).
  DistributedWeightedSampler(std::vector<double> weights, int64_t world_size, int64_t rank,
                             int64_t num_samples = 0, bool replacement = true,
                             uint64_t seed = 0);
  std::vector<int64_t> indices(size_t dataset_size, uint64_t epoch) override;
  void check_fits(size_t dataset_size) const override;  ///< One weight per sample.
  int64_t num_samples() const { return num_samples_; }  ///< Indices per rank per epoch.
  int64_t world_size() const override { return world_size_; }  ///< Ranks in the job.
  int64_t rank() const override { return rank_; }  ///< This rank, in [0, world_size).
  uint64_t seed() const override { return seed_; }  ///< Epoch e draws with seed + e.
  /// Of the weights and the draw's options, not the seed: equal on ranks that agree.
  uint64_t fingerprint() const override { return fingerprint_; }
  /// num_samples(): the indices each rank gets in every epoch.
  int64_t rank_share(size_t dataset_size, uint64_t epoch) const override;

 private:
  std::vector<double> weights_;
  int64_t world_size_;
  int64_t rank_;
  int64_t num_samples_;
  bool replacement_;
  uint64_t seed_;
  uint64_t fingerprint_ = 0;
};

}  // namespace mploader
