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
  /// Throws OptionError when this sampler cannot serve a dataset of `dataset_size` samples
  /// (weights or indices that do not fit it). The Loader calls it once at construction, so the
  /// mistake shows before any worker starts rather than at the first epoch. Default: fits any.
  virtual void check_fits(size_t dataset_size) const { (void)dataset_size; }
};

/// 0, 1, ..., n-1. Like RandomSampler and DistributedSampler, refuses n over 10^9 samples.
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

/// The given indices, in the given order, every epoch: evaluation on a fixed part of a dataset
/// (PyTorch has no such class; it is SequentialSampler over a Subset). Indices may repeat.
class SubsetSampler : public Sampler {
 public:
  /// Throws OptionError("indices") for a negative index, naming its position.
  explicit SubsetSampler(std::vector<int64_t> indices);
  std::vector<int64_t> indices(size_t dataset_size, uint64_t epoch) override;
  /// Throws OptionError("indices") naming the first index >= dataset_size and its position.
  void check_fits(size_t dataset_size) const override;

 private:
  std::vector<int64_t> indices_;
};

/// torch.utils.data.SubsetRandomSampler: the given indices in a random order per epoch, the
/// same order PyTorch gives with a generator seeded seed + epoch
/// (`indices[i] for i in torch.randperm(len(indices), generator=g)`).
class SubsetRandomSampler : public Sampler {
 public:
  /// Throws OptionError("indices") for a negative index, naming its position.
  SubsetRandomSampler(std::vector<int64_t> indices, uint64_t seed = 0);
  std::vector<int64_t> indices(size_t dataset_size, uint64_t epoch) override;
  /// Throws OptionError("indices") naming the first index >= dataset_size and its position.
  void check_fits(size_t dataset_size) const override;

 private:
  std::vector<int64_t> indices_;
  uint64_t seed_;
};

/// torch.utils.data.WeightedRandomSampler: `num_samples` indices drawn with probability
/// proportional to `weights` (one per sample), with or without replacement; the same indices
/// PyTorch draws with torch.multinomial and a generator seeded seed + epoch. The usual use is
/// class balancing: weight each sample 1 / (count of its class).
///
/// Errors (OptionError at construction, naming the input): no weights, a negative, NaN or
/// infinite weight (its position and value), all zero, num_samples < 1 or over 10^9, more
/// samples without replacement than positive weights, more than 2^24 weights (the most
/// torch.multinomial takes). check_fits(): the number of weights is not the dataset's size.
class WeightedRandomSampler : public Sampler {
 public:
  /// `num_samples` indices per epoch; with `replacement` false, each index at most once.
  WeightedRandomSampler(std::vector<double> weights, int64_t num_samples, bool replacement = true,
                        uint64_t seed = 0);
  std::vector<int64_t> indices(size_t dataset_size, uint64_t epoch) override;
  void check_fits(size_t dataset_size) const override;  ///< One weight per sample.
  int64_t num_samples() const { return num_samples_; }  ///< Indices per epoch.

 private:
  std::vector<double> weights_;
  int64_t num_samples_;
  bool replacement_;
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
  /// Cuts `sampler`'s order into batches of `batch_size` (>= 1). Throws OptionError for a null
  /// sampler or a batch_size of 0.
  FixedSizeBatchSampler(std::shared_ptr<Sampler> sampler, size_t batch_size, bool drop_last);
  std::vector<std::vector<int64_t>> batches(size_t dataset_size, uint64_t epoch) override;
  size_t max_batch_size() const override { return batch_size_; }

 private:
  std::shared_ptr<Sampler> sampler_;
  size_t batch_size_;
  bool drop_last_;
};

}  // namespace mploader
