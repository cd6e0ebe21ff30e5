/// @file
/// Batches of samples of similar length under a token budget: BucketBatchSampler for one
/// process, DistributedBucketSampler for the ranks of a data-parallel job (the same number of
/// batches on every rank, of similar cost at each step).
///
///   auto launch = mploader::launch_info_from_env();          // torchrun, SLURM or Open MPI
///   mploader::BucketOptions bo;
///   bo.max_tokens = 16384;                                   // batch size x longest, padding in
///   bo.seed = 1;
///   auto sampler = std::make_shared<mploader::DistributedBucketSampler>(
///       lengths, bo, launch.world_size, launch.rank);
///   options.batch_sampler = sampler;
///   options.collate = mploader::pad_collate();
///   mploader::Loader loader(dataset, options);
///   mploader::verify_ranks_agree(*process_group, *sampler, dataset->size(), epoch);
///
/// Thread-safety: a sampler is used from one thread at a time (the Loader calls it from the
/// thread that iterates it).
#pragma once

#include <mploader/batch.h>
#include <mploader/elastic_sampler.h>
#include <mploader/rank_agreement.h>
#include <mploader/sampler.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mploader {

namespace detail {
struct BucketEpochPlan;
}

/// How BucketBatchSampler forms batches. Either budget may be 0 (no limit), not both.
struct BucketOptions {
  /// Most tokens in one batch, padding included: batch length x its longest sample. A sample of
  /// length 0 counts as 1. A sample longer than the budget is an OptionError at construction
  /// naming it, its length and the budget (not a batch of its own: a batch over the budget is
  /// the out-of-memory error mid-epoch that the budget is there to prevent).
  int64_t max_tokens = 0;
  /// Most samples in one batch. Without it, max_batch_size() is max_tokens / the shortest length.
  int64_t max_batch_size = 0;
  /// Bucket widths: bucket k holds lengths [b_k, b_k+1) with b_0 = 1 and
  /// b_k+1 = max(b_k + 1, ceil(b_k * bucket_ratio)). A batch may run on from one bucket into the
  /// next, but its longest sample is never more than bucket_ratio times its shortest, so padding
  /// stays under 1 - 1/bucket_ratio of any batch (9% at 1.1). 1.0: only equal lengths batch
  /// together. Smaller ratios pad less but leave more part-filled batches where lengths are
  /// sparse. >= 1.
  double bucket_ratio = 1.1;
  /// Shuffle samples inside each bucket and the batches across buckets, per (seed, epoch).
  /// false: buckets in length order, samples in index order, no random order anywhere.
  bool shuffle = true;
  uint64_t seed = 0;  ///< Epoch e shuffles with a generator seeded from (seed, e).
  /// When the epoch's batches do not divide by the world size: kPad repeats batches from the
  /// start of the shuffled epoch until they do (every rank gets at least one when there is one),
  /// kDrop leaves the last ones out (all of them when there are fewer batches than ranks).
  enum class Uneven {
    kPad,   ///< Repeat batches from the start of the epoch.
    kDrop,  ///< Leave the last batches out.
  };
  Uneven uneven = Uneven::kPad;  ///< See Uneven.
  /// Give the ranks batches of similar cost at each step: the epoch's batches are sorted by cost
  /// (length x longest sample) and every step takes world_size neighbours, in random step order.
  bool balance_ranks = true;
  /// Run the step with the costliest batch first, so that an out-of-memory error shows at once.
  bool costliest_first = false;
};

/// What one epoch's plan holds (global numbers unless named rank_).
struct BucketEpochStats {
  uint64_t epoch = 0;          ///< The epoch these numbers are of.
  size_t batches = 0;          ///< formed from the dataset, before padding or dropping
  size_t batches_per_rank = 0;  ///< steps: the same on every rank
  size_t padded_batches = 0;   ///< repeated to even out the ranks (Uneven::kPad)
  size_t padded_samples = 0;   ///< samples in those repeated batches
  size_t dropped_batches = 0;  ///< left out to even out the ranks (Uneven::kDrop)
  size_t dropped_samples = 0;  ///< samples in those left-out batches
  int64_t tokens = 0;          ///< sum of sample lengths over all ranks' batches
  int64_t padded_tokens = 0;   ///< sum of batch length x longest sample, over the same batches
  size_t rank_samples = 0;     ///< samples this rank loads this epoch
  /// Share of the loaded tokens that are padding: 1 - tokens / padded_tokens.
  double pad_fraction() const {
    return padded_tokens > 0 ? 1.0 - static_cast<double>(tokens) / padded_tokens : 0.0;
  }
};

/// Where a bucket sampler stands: enough to resume mid-epoch at the same batch on every rank.
/// The same on every rank, so rank 0 may save it for all. to_json() / from_json() round-trip it.
struct BucketSamplerState {
  uint64_t epoch = 0;  ///< The epoch in progress.
  uint64_t seed = 0;   ///< BucketOptions::seed (it may differ from the resuming sampler's).
  /// Batches of `epoch` each rank has consumed (and will skip on resume).
  uint64_t batches_consumed = 0;
  int64_t world_size = 1;  ///< Ranks the state was taken with; a resume must have as many.
  /// Of the lengths and every batching option; a state from another setup is refused.
  uint64_t fingerprint = 0;
  std::string to_json() const;  ///< One line of JSON with every field.
  /// Throws OptionError naming "state" on malformed text or missing keys.
  static BucketSamplerState from_json(const std::string& text);
};

/// Batches of similar length under BucketOptions' budgets for one process: samples go into
/// length buckets, are shuffled inside each, cut greedily in bucket order (a batch closes when
/// a budget or the length spread would be exceeded) and the batches are shuffled across
/// buckets. Deterministic in (lengths, options, epoch), and the same with any compiler on any
/// IEEE-754 machine (its own generator and shuffle; integer bucket bounds), so ranks on
/// different nodes agree. Use it as LoaderOptions::batch_sampler with pad_collate(), and
/// LoaderOptions::max_batch_bytes about (max_tokens + max_batch_size()) x element size: the
/// Loader's own estimate scales one sample to max_batch_size(). Resuming from a state needs
/// in_order = true (the default). Each batches() call plans the whole epoch (about 0.1 s per
/// million samples); the last plan is cached, so the Loader's repeated calls cost nothing.
class BucketBatchSampler : public BatchSampler, public RankedSampler, public ElasticSampler {
 public:
  /// lengths[i] is sample i's length (tokens, frames, ...), >= 0. Throws OptionError naming the
  /// option or, for a sample over max_tokens, "lengths" with its index and length.
  BucketBatchSampler(std::vector<int64_t> lengths, BucketOptions options);
  /// length_of(i) for i in [0, dataset_size) is called once each, here.
  BucketBatchSampler(size_t dataset_size, const std::function<int64_t(int64_t)>& length_of,
                     BucketOptions options);
  ~BucketBatchSampler() override;

  /// This rank's batches of `epoch`, less the ones a loaded state says were consumed.
  /// dataset_size must be the number of lengths given (OptionError "dataset_size" if not).
  std::vector<std::vector<int64_t>> batches(size_t dataset_size, uint64_t epoch) override;
  size_t max_batch_size() const override { return max_batch_size_; }
  /// Counts and padding of `epoch`'s plan (planning it if needed).
  BucketEpochStats stats(uint64_t epoch) const;

  /// The state after `batches_consumed` batches of `epoch` on each rank.
  BucketSamplerState state_dict(uint64_t epoch, uint64_t batches_consumed) const;
  /// The state once `batch` (delivered by a Loader with in_order = true) is consumed.
  BucketSamplerState state_after(const Batch& batch) const;
  /// The next batches(n, state.epoch) skips the batches consumed; the seed becomes the state's.
  /// Throws OptionError naming "state" when it comes from other lengths, options or world size,
  /// or consumed more batches than the epoch has.
  void load_state_dict(const BucketSamplerState& state);

  const std::vector<int64_t>& lengths() const { return lengths_; }  ///< One per sample.
  const BucketOptions& options() const { return options_; }  ///< As given, checked.
  /// Of the lengths and the batching options, not the seed; equal on ranks that agree.
  uint64_t fingerprint() const override { return fingerprint_; }
  int64_t world_size() const override { return world_size_; }  ///< 1 unless distributed.
  int64_t rank() const override { return rank_; }  ///< 0 unless distributed.
  uint64_t seed() const override { return options_.seed; }  ///< BucketOptions::seed
  /// stats(epoch).batches_per_rank: this rank's batches in `epoch`.
  int64_t rank_share(size_t dataset_size, uint64_t epoch) const override;
  /// The epoch's batches as formed and shuffled, before padding, dropping or sharing out
  /// (the same for any world size): each one a group.
  GlobalOrder global_order(size_t dataset_size, uint64_t epoch) const override;
  /// The positions of this rank's batches() in global_order().
  std::vector<int64_t> rank_positions(size_t dataset_size, uint64_t epoch) const override;
  /// Of the lengths, the budgets, bucket_ratio, shuffle and the seed.
  uint64_t order_fingerprint() const override;

 protected:
  /// For DistributedBucketSampler: this rank's share of every epoch.
  BucketBatchSampler(std::vector<int64_t> lengths, BucketOptions options, int64_t world_size,
                     int64_t rank);

 private:
  /// The whole epoch's plan, cached for the last (epoch, seed) asked.
  std::shared_ptr<const detail::BucketEpochPlan> plan(uint64_t epoch) const;

  std::vector<int64_t> lengths_;
  BucketOptions options_;
  int64_t world_size_;
  int64_t rank_;
  std::vector<int64_t> bucket_bounds_;  ///< b_1, b_2, ...: upper ends (exclusive) of the buckets
  size_t max_batch_size_ = 1;
  uint64_t fingerprint_ = 0;
  uint64_t order_fingerprint_ = 0;  ///< order_fingerprint() but the seed
  std::optional<BucketSamplerState> resume_;
  mutable std::shared_ptr<const detail::BucketEpochPlan> cached_plan_;
  mutable uint64_t cached_epoch_ = 0;
  mutable uint64_t cached_seed_ = 0;
};

/// BucketBatchSampler whose epoch is shared out across world_size ranks: every rank gets exactly
/// batches_per_rank batches in every epoch (padded or dropped per BucketOptions::uneven), the
/// ranks' batches at each step have similar cost (balance_ranks), and no sample is in two
/// ranks' batches except repeated (padded) ones. Each rank computes the whole epoch plan from
/// the same inputs and keeps its share, so no communication is needed.
class DistributedBucketSampler : public BucketBatchSampler {
 public:
  /// Throws OptionError naming "world_size" or "rank" when out of range.
  DistributedBucketSampler(std::vector<int64_t> lengths, BucketOptions options,
                           int64_t world_size, int64_t rank);
  /// length_of(i) for i in [0, dataset_size) is called once each, here.
  DistributedBucketSampler(size_t dataset_size, const std::function<int64_t(int64_t)>& length_of,
                           BucketOptions options, int64_t world_size, int64_t rank);
};

}  // namespace mploader
