// The longest epoch a sampler may plan. Every sampler hands the Loader its whole epoch as a
// list of indices, which the Loader keeps cut into batches: about 16 bytes per index in the
// training process. A mistaken count (num_samples = 1e12) would otherwise fill memory for
// seconds and end in std::bad_alloc or an allocator error from libtorch.
#pragma once

#include <cstdint>
#include <string>

namespace mploader {
class Sampler;
}

namespace mploader::detail {

// The most indices one epoch may hold.
constexpr uint64_t kMaxEpochIndices = 1000000000;

// Throws OptionError(option) when an epoch of `count` indices is longer than kMaxEpochIndices:
// "mploader: <who>: <cause> makes an epoch of <count> indices, more than ...; <fix>".
void check_epoch_length(uint64_t count, const std::string& option, const std::string& who,
                        const std::string& cause, const std::string& fix);

// For the samplers whose epoch is the whole dataset (sequential, random, distributed):
// throws OptionError("sampler") naming `who` and the dataset's size when it is too long.
void check_dataset_epoch(uint64_t dataset_size, const std::string& who);

// The same when the Loader is built, for `sampler` if it is one of those three kinds.
void check_dataset_epoch(const Sampler& sampler, uint64_t dataset_size);

}  // namespace mploader::detail
