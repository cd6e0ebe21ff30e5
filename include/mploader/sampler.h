/// @file
/// Samplers decide which indices an epoch visits and how they group into batches.
/// They are used in the main process only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace mploader {

/// The order of indices for one epoch. Must be deterministic in (dataset_size, epoch).
class Sampler {
 public:
  virtual ~Sampler() = default;  ///< Samplers are owned through shared_ptr.
  /// The indices `epoch` visits, each in [0, dataset_size), in order. Called from the thread
  /// that iterates the Loader, once per epoch.
  virtual std::vector<int64_t> indices(size_t dataset_size, uint64_t epoch) = 0;
};

/// 0, 1, ..., n-1.
class SequentialSampler : public Sampler {
 public:
  std::vector<int64_t> indices(size_t dataset_size, uint64_t epoch) override;
};

/// A permutation drawn from libtorch's CPU generator seeded with seed + epoch, the same
/// permutation as torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch)).
class RandomSampler : public Sampler {
 public:
  /// Epoch e uses the generator seeded seed + e.
  explicit RandomSampler(uint64_t seed) : seed_(seed) {}
  std::vector<int64_t> indices(size_t dataset_size, uint64_t epoch) override;

 private:
  uint64_t seed_;
};

/// The batches of one epoch, each a list of dataset indices.
class BatchSampler {
 public:
  virtual ~BatchSampler() = default;  ///< Batch samplers are owned through shared_ptr.
  /// The batches of `epoch`, each a non-empty list of indices in [0, dataset_size), at most
  /// max_batch_size() long. Called from the thread that iterates the Loader.
  virtual std::vector<std::vector<int64_t>> batches(size_t dataset_size, uint64_t epoch) = 0;
  /// An upper bound on the length of any batch; sizes the index area of each ring slot.
  virtual size_t max_batch_size() const = 0;
};

/// Cuts a sampler's order into batches of batch_size; the last short batch is kept unless
/// drop_last.
class FixedSizeBatchSampler : public BatchSampler {
 public:
  /// Cuts `sampler`'s order into batches of `batch_size` (>= 1).
  FixedSizeBatchSampler(std::shared_ptr<Sampler> sampler, size_t batch_size, bool drop_last);
  std::vector<std::vector<int64_t>> batches(size_t dataset_size, uint64_t epoch) override;
  size_t max_batch_size() const override { return batch_size_; }

 private:
  std::shared_ptr<Sampler> sampler_;
  size_t batch_size_;
  bool drop_last_;
};

}  // namespace mploader
