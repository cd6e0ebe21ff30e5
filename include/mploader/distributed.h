/// @file
/// Distributed data loading: samplers that shard an epoch across the ranks of a job, bucketing by
/// sample length under a token budget, rank and world size from launcher environment variables,
/// and a check over a c10d process group that every rank built the same epoch.
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
/// Thread-safety: the samplers are used from one thread at a time (the Loader calls them from
/// the thread that iterates it); launch_info_from_env and verify_ranks_agree are reentrant.
#pragma once

#include <mploader/batch.h>
#include <mploader/sampler.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace c10d {
class Backend;
class ProcessGroup;
}  // namespace c10d

namespace mploader {

namespace detail {
struct EpochPlan;
}

/// Rank r of world_size takes indices[r::world_size] of one epoch's order, exactly as
/// torch.utils.data.DistributedSampler does for the same arguments: the order is
/// torch.randperm(n, generator seeded seed + epoch) when shuffle, else 0..n-1; without drop_last
/// it is padded to a multiple of world_size by repeating it from the start (more than once when
/// world_size > n); with drop_last its tail is cut to a multiple. seed + epoch wraps at 2^64.
/// Use it as LoaderOptions::sampler; batch_size and drop_last then cut this rank's indices.
class DistributedSampler : public Sampler {
 public:
  /// Throws OptionError naming "world_size" (< 1) or "rank" (outside [0, world_size)).
  DistributedSampler(int64_t world_size, int64_t rank, bool shuffle = true, uint64_t seed = 0,
                     bool drop_last = false);
  std::vector<int64_t> indices(size_t dataset_size, uint64_t epoch) override;
  /// Indices this rank gets per epoch (PyTorch's num_samples); the same on every rank.
  size_t num_samples(size_t dataset_size) const;
  int64_t world_size() const { return world_size_; }  ///< Ranks in the job.
  int64_t rank() const { return rank_; }  ///< This rank, in [0, world_size).
  uint64_t seed() const { return seed_; }  ///< Epoch e shuffles with seed + e.

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
class DistributedWeightedSampler : public Sampler {
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
  int64_t world_size() const { return world_size_; }  ///< Ranks in the job.
  int64_t rank() const { return rank_; }  ///< This rank, in [0, world_size).

 private:
  std::vector<double> weights_;
  int64_t world_size_;
  int64_t rank_;
  int64_t num_samples_;
  bool replacement_;
  uint64_t seed_;
};

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
class BucketBatchSampler : public BatchSampler {
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
  uint64_t fingerprint() const { return fingerprint_; }
  int64_t world_size() const { return world_size_; }  ///< 1 unless distributed.
  int64_t rank() const { return rank_; }  ///< 0 unless distributed.

 protected:
  /// For DistributedBucketSampler: this rank's share of every epoch.
  BucketBatchSampler(std::vector<int64_t> lengths, BucketOptions options, int64_t world_size,
                     int64_t rank);

 private:
  /// The whole epoch's plan, cached for the last (epoch, seed) asked.
  std::shared_ptr<const detail::EpochPlan> plan(uint64_t epoch) const;

  std::vector<int64_t> lengths_;
  BucketOptions options_;
  int64_t world_size_;
  int64_t rank_;
  std::vector<int64_t> bucket_bounds_;  ///< b_1, b_2, ...: upper ends (exclusive) of the buckets
  size_t max_batch_size_ = 1;
  uint64_t fingerprint_ = 0;
  std::optional<BucketSamplerState> resume_;
  mutable std::shared_ptr<const detail::EpochPlan> cached_plan_;
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

/// Where this process sits in a distributed job, as its launcher said.
struct LaunchInfo {
  int64_t rank = 0;        ///< This process's rank, in [0, world_size).
  int64_t world_size = 1;  ///< Processes in the job.
  int64_t local_rank = -1;  ///< -1 when the launcher did not say
  /// "torchrun" (RANK, WORLD_SIZE, LOCAL_RANK), "slurm" (SLURM_PROCID, SLURM_NTASKS,
  /// SLURM_LOCALID), "openmpi" (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK), or "none": a single
  /// process, rank 0 of 1.
  std::string launcher = "none";
};

/// Reads the variables above; torchrun's win (it may run under SLURM or mpirun), and SLURM's and
/// Open MPI's must agree when both are set. Throws OptionError naming the variable when one is
/// not a whole number, the rank is outside [0, world size), a rank comes without its size (or
/// the reverse), or values contradict each other.
LaunchInfo launch_info_from_env();
/// The same with variables from `get` (nullopt: not set); for tests and embedders.
LaunchInfo launch_info_from_env(
    const std::function<std::optional<std::string>(const std::string&)>& get);

/// What every rank of a job must agree on before it iterates an epoch.
struct RankAgreement {
  int64_t rank = 0;          ///< The sampler's rank.
  int64_t world_size = 1;    ///< The sampler's world size.
  int64_t dataset_size = 0;  ///< Samples in the dataset.
  uint64_t fingerprint = 0;  ///< of the lengths and batching options, 0 when none
  uint64_t seed = 0;   ///< The sampler's seed.
  uint64_t epoch = 0;  ///< The epoch about to run.
  int64_t batches = 0;  ///< this rank's batches (or samples) in the epoch
};
/// What `sampler` will do in `epoch` over a dataset of `dataset_size`, for verify_ranks_agree.
RankAgreement agreement_of(const BucketBatchSampler& sampler, size_t dataset_size,
                           uint64_t epoch);
/// The same for a DistributedSampler (batches counts its samples).
RankAgreement agreement_of(const DistributedSampler& sampler, size_t dataset_size,
                           uint64_t epoch);

/// Collective over `group` (every rank must call it): gathers each rank's RankAgreement and
/// throws OptionError, on every rank alike, naming the first field where ranks differ and their
/// values; also when a sampler's rank or world size is not the group's. A rank that never calls
/// leaves the others waiting up to `timeout` (0: the group's own timeout). Throws Error if
/// mploader was built without c10d.
void verify_ranks_agree(c10d::ProcessGroup& group, const RankAgreement& mine,
                        std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
/// The same over one c10d backend. From libtorch 2.0 on, `c10d::ProcessGroupGloo` is a
/// `c10d::Backend` (a ProcessGroup holds one per device type), and takes this overload; in 1.13
/// it is a ProcessGroup and takes the one above.
void verify_ranks_agree(c10d::Backend& group, const RankAgreement& mine,
                        std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
/// verify_ranks_agree(group, agreement_of(sampler, dataset_size, epoch), timeout).
inline void verify_ranks_agree(c10d::ProcessGroup& group, const BucketBatchSampler& sampler,
                               size_t dataset_size, uint64_t epoch,
                               std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) {
  verify_ranks_agree(group, agreement_of(sampler, dataset_size, epoch), timeout);
}
/// verify_ranks_agree(backend, agreement_of(sampler, dataset_size, epoch), timeout).
inline void verify_ranks_agree(c10d::Backend& group, const BucketBatchSampler& sampler,
                               size_t dataset_size, uint64_t epoch,
                               std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) {
  verify_ranks_agree(group, agreement_of(sampler, dataset_size, epoch), timeout);
}

}  // namespace mploader
