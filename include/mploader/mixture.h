/// @file
/// MixtureSampler: a training mixture of several datasets in fixed proportions (a language
/// model's web, books and code corpora at 0.5 / 0.3 / 0.2), drawn over the index space of a
/// ConcatDataset of those sources.
///
///   auto corpora = std::make_shared<mploader::ConcatDataset>(
///       std::vector<std::shared_ptr<mploader::Dataset>>{web, books, code});
///   mploader::MixtureOptions mix;
///   mix.weights = {0.5, 0.3, 0.2};
///   mix.num_samples = 100000;                    // draws per epoch
///   options.sampler = std::make_shared<mploader::MixtureSampler>(corpora->sizes(), mix);
///
/// Each draw picks a source with probability weight / sum of weights (the weights are
/// normalised: they need not sum to 1), then that source's next sample in a pass through it,
/// shuffled per (seed, epoch, source, pass) or in order. The epoch is a function of (seed,
/// epoch) alone, so Loader::state_dict() / load_state_dict() resume it exactly, mixture and
/// position in every source, and every rank (or rerun) with the same options draws the same.
#pragma once

#include <mploader/mixture_end.h>
#include <mploader/sampler.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mploader {

/// What a MixtureSampler draws. Plain struct, checked by the MixtureSampler's constructor.
struct MixtureOptions {
  /// One weight per source, >= 0, at least one positive: source k is drawn with probability
  /// weights[k] / sum(weights). Normalised: any positive sum will do, even one past 1e308.
  std::vector<double> weights;
  MixtureEnd end = MixtureEnd::kCycle;  ///< When the epoch ends (MixtureEnd).
  /// Draws per epoch, at most 10^9. kCycle: 0 means the sources' total size. kFirstExhausted
  /// and kAllExhausted: an upper bound, 0 for none.
  int64_t num_samples = 0;
  bool shuffle = true;  ///< Shuffle each pass through a source; false: each in index order.
  uint64_t seed = 0;    ///< Epoch e draws from generators seeded by (seed, e).
};

/// Draws the indices of a ConcatDataset of sources of `source_sizes` samples (source k's sample
/// j is index offset_k + j, offset_k the sum of the sizes before it) in the proportions of
/// MixtureOptions. Use it as LoaderOptions::sampler. indices() only reads the sampler.
///
/// Errors (OptionError naming the input and the fix): no sources; not one weight per source; a
/// negative, NaN or infinite weight, or all zero; a positive weight on an empty source;
/// num_samples < 0; an epoch over 10^9 draws. check_fits(): the dataset's size is not the sum
/// of source_sizes (sizes of other sources, or the dataset is not their ConcatDataset).
class MixtureSampler : public Sampler {
 public:
  /// See the class comment.
  MixtureSampler(std::vector<size_t> source_sizes, MixtureOptions options);
  std::vector<int64_t> indices(size_t dataset_size, uint64_t epoch) override;
  void check_fits(size_t dataset_size) const override;  ///< The sources' total size.
  /// Each source's weight divided by their sum.
  const std::vector<double>& probabilities() const { return probabilities_; }
  /// The source of dataset index `index` (in [0, sum of sizes)).
  size_t source_of(int64_t index) const;

 private:
  std::vector<size_t> sizes_;
  std::vector<int64_t> offsets_;  // sizes_.size() + 1 cumulative sizes, from 0
  std::vector<double> probabilities_;
  MixtureOptions options_;
};

}  // namespace mploader
