#include "sampler/epoch_limit.h"

#include "util/units.h"

#include <mploader/distributed_sampler.h>
#include <mploader/errors.h>
#include <mploader/sampler.h>

#include <limits>

namespace mploader::detail {
namespace {

// The sampler's list and the Loader's batches of it, 8 bytes an index each.
constexpr uint64_t kBytesPerIndex = 16;

}  // namespace

void check_epoch_length(uint64_t count, const std::string& option, const std::string& who,
                        const std::string& cause, const std::string& fix) {
  if (count <= kMaxEpochIndices) return;
  const uint64_t bytes = count > std::numeric_limits<uint64_t>::max() / kBytesPerIndex
                             ? std::numeric_limits<uint64_t>::max()
                             : count * kBytesPerIndex;
  throw OptionError(option, "mploader: " + who + ": " + cause + " makes an epoch of " +
                                std::to_string(count) + " indices, more than the " +
                                std::to_string(kMaxEpochIndices) +
                                " one epoch may hold (the Loader keeps every index of an "
                                "epoch in memory, about " + std::to_string(kBytesPerIndex) +
                                " bytes each: " + human_bytes(bytes) + " here); " + fix);
}

void check_dataset_epoch(uint64_t dataset_size, const std::string& who) {
  check_epoch_length(dataset_size, "sampler", who,
                     "a dataset of " + std::to_string(dataset_size) + " samples",
                     "read it as a StreamingDataset (planned by shard, not by index), or give "
                     "LoaderOptions::sampler a SubsetRandomSampler over part of it per epoch");
}

void check_dataset_epoch(const Sampler& sampler, uint64_t dataset_size) {
  const char* who = dynamic_cast<const SequentialSampler*>(&sampler) ? "SequentialSampler"
                    : dynamic_cast<const RandomSampler*>(&sampler)   ? "RandomSampler"
                    : dynamic_cast<const DistributedSampler*>(&sampler) ? "DistributedSampler"
                                                                         : nullptr;
  if (who != nullptr) check_dataset_epoch(dataset_size, who);
}

}  // namespace mploader::detail
