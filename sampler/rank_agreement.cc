// What a ranked sampler's epoch is, for verify_ranks_agree (c10d_agreement.cc), and the one check
// of a rank against its world size.
// Thread-safety: pure functions.
#include "sampler/rank_check.h"

#include <mploader/errors.h>
#include <mploader/rank_agreement.h>

#include <string>

namespace mploader {

RankAgreement agreement_of(const RankedSampler& sampler, size_t dataset_size, uint64_t epoch) {
  RankAgreement a;
  a.rank = sampler.rank();
  a.world_size = sampler.world_size();
  a.dataset_size = static_cast<int64_t>(dataset_size);
  a.fingerprint = sampler.fingerprint();
  a.seed = sampler.seed();
  a.epoch = epoch;
  a.batches = sampler.rank_share(dataset_size, epoch);
  return a;
}

namespace detail {

void check_rank(const char* who, int64_t world_size, int64_t rank) {
  if (world_size < 1) {
    throw OptionError("world_size", std::string("mploader: ") + who + " world_size is " +
                                        std::to_string(world_size) +
                                        "; it must be 1 or more (the number of ranks)");
  }
  if (rank < 0 || rank >= world_size) {
    throw OptionError("rank", std::string("mploader: ") + who + " rank " + std::to_string(rank) +
                                  " is outside [0, " + std::to_string(world_size) +
                                  ") for world_size " + std::to_string(world_size) +
                                  ": give each process its own rank, from 0 to world_size - 1");
  }
}

}  // namespace detail
}  // namespace mploader
