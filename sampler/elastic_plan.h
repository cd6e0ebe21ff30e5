// The rest of an epoch after a job state (include/mploader/elastic.h), on a new number of
// ranks: the positions of the epoch's global order not yet delivered, cut into one run per
// rank and into batches so that every rank takes the same number of steps and every position
// comes exactly once. Pure functions; each rank computes every rank's counts alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace mploader::detail {

// One rank's batches of positions, and what evening out the steps did.
struct ResumedBatches {
  std::vector<std::vector<int64_t>> batches;
  size_t fewest = 0;   // batches of the rank with the fewest, before evening out
  size_t most = 0;     // and of the rank with the most
  size_t split = 0;    // batches this rank split in two to take as many steps as the others
  size_t padded = 0;   // repeated, where no batch could be split (batches of one sample)
  size_t dropped = 0;  // left out (drop_last)
};

// Rank `rank`'s share [begin, end) of `total` items: the ranks differ by one item at most.
std::pair<int64_t, int64_t> even_share(int64_t total, int64_t world, int64_t rank);

// Splits the largest batch in two (the halves side by side) until there are `target`, calling
// `on_split(b)` when batch b became b and b + 1. Stops at batches of one sample; returns how
// many it split.
size_t split_until(std::vector<std::vector<int64_t>>& batches, size_t target,
                   const std::function<void(size_t)>& on_split);

// `remaining` (positions, in the global order) for a sampler that cuts batches anywhere: a run
// per rank, in batches of `batch_size`; a rank one step short splits its largest batch.
// drop_last: every rank takes as many full batches as the one with the fewest.
ResumedBatches resume_by_samples(const std::vector<int64_t>& remaining, int64_t world,
                                 int64_t rank, int64_t batch_size, bool drop_last);

// `groups` (the remaining positions of each of the sampler's batches, in the global order, none
// empty) for a sampler that forms its own batches: a run of groups per rank, each group one
// batch; a rank one step short splits its largest.
ResumedBatches resume_by_groups(const std::vector<std::vector<int64_t>>& groups, int64_t world,
                                int64_t rank);

}  // namespace mploader::detail
