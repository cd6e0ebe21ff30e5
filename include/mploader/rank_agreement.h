/// @file
/// A check, over a c10d process group, that every rank of a job built the same epoch: the same
/// dataset size, sampler, seed, epoch and number of batches. Ranks that differ fail alike, with
/// the field and the values, instead of hanging in the first collective that one of them
/// misses. Reentrant.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace c10d {
class Backend;
class ProcessGroup;
}  // namespace c10d

namespace mploader {

/// What every rank of a job must agree on before it iterates an epoch.
struct RankAgreement {
  int64_t rank = 0;          ///< The sampler's rank.
  int64_t world_size = 1;    ///< The sampler's world size.
  int64_t dataset_size = 0;  ///< Samples in the dataset.
  uint64_t fingerprint = 0;  ///< of the lengths, weights and batching options, 0 when none
  uint64_t seed = 0;   ///< The sampler's seed.
  uint64_t epoch = 0;  ///< The epoch about to run.
  int64_t batches = 0;  ///< this rank's batches (or samples) in the epoch
};

/// A sampler that shares each epoch out across the ranks of a job: what its RankAgreement is
/// made of. DistributedSampler, DistributedWeightedSampler and the bucket samplers are ones.
class RankedSampler {
 public:
  virtual ~RankedSampler() = default;
  virtual int64_t world_size() const = 0;  ///< Ranks in the job.
  virtual int64_t rank() const = 0;        ///< This rank, in [0, world_size).
  virtual uint64_t seed() const = 0;       ///< The seed its epochs are drawn with.
  /// Of what every rank must hold alike beyond the seed (lengths, weights, options); 0: none.
  virtual uint64_t fingerprint() const { return 0; }
  /// This rank's indices (a Sampler) or batches (a BatchSampler) in `epoch`.
  virtual int64_t rank_share(size_t dataset_size, uint64_t epoch) const = 0;
};

/// What `sampler` will do in `epoch` over a dataset of `dataset_size`, for verify_ranks_agree.
RankAgreement agreement_of(const RankedSampler& sampler, size_t dataset_size, uint64_t epoch);

/// Collective over `group` (every rank must call it): gathers each rank's RankAgreement and
/// throws OptionError, on every rank alike, naming the first field where ranks differ and their
/// values; also when a sampler's rank or world size is not the group's. A rank that never calls
/// leaves the others waiting up to `timeout` (0: the group's own timeout). Throws Error if
/// mploader was built without c10d. A Loader's own is Loader::rank_agreement().
void verify_ranks_agree(c10d::ProcessGroup& group, const RankAgreement& mine,
                        std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
/// The same over one c10d backend. From libtorch 2.0 on, `c10d::ProcessGroupGloo` is a
/// `c10d::Backend` (a ProcessGroup holds one per device type), and takes this overload; in 1.13
/// it is a ProcessGroup and takes the one above.
void verify_ranks_agree(c10d::Backend& group, const RankAgreement& mine,
                        std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
/// verify_ranks_agree(group, agreement_of(sampler, dataset_size, epoch), timeout).
inline void verify_ranks_agree(c10d::ProcessGroup& group, const RankedSampler& sampler,
                               size_t dataset_size, uint64_t epoch,
                               std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) {
  verify_ranks_agree(group, agreement_of(sampler, dataset_size, epoch), timeout);
}
/// verify_ranks_agree(backend, agreement_of(sampler, dataset_size, epoch), timeout).
inline void verify_ranks_agree(c10d::Backend& group, const RankedSampler& sampler,
                               size_t dataset_size, uint64_t epoch,
                               std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) {
  verify_ranks_agree(group, agreement_of(sampler, dataset_size, epoch), timeout);
}

}  // namespace mploader
