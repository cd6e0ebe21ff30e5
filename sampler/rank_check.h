// sampler/: the one check of a (world_size, rank) pair, for every sampler that shares an epoch
// out across ranks and for LoaderOptions.
#pragma once

#include <cstdint>

namespace mploader::detail {

// Throws OptionError naming "world_size" (below 1) or "rank" (outside [0, world_size)), with
// `who` (the class or struct given them) and both numbers.
void check_rank(const char* who, int64_t world_size, int64_t rank);

}  // namespace mploader::detail
