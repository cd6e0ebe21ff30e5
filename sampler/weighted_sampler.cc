// WeightedRandomSampler: torch.utils.data.WeightedRandomSampler, drawn by the same
// torch.multinomial call with a generator seeded seed + epoch.
#include "sampler/epoch_limit.h"
#include "sampler/weights.h"

#include <mploader/sampler.h>

#include <string>

namespace mploader {

WeightedRandomSampler::WeightedRandomSampler(std::vector<double> weights, int64_t num_samples,
                                             bool replacement, uint64_t seed)
    : weights_(std::move(weights)), num_samples_(num_samples), replacement_(replacement),
      seed_(seed) {
  const char* who = "WeightedRandomSampler";
  const size_t positive = detail::check_weights(weights_, "weights", who);
  weights_ = detail::summable_weights(std::move(weights_), "weights", who);
  detail::check_draw(weights_.size(), positive, num_samples_, replacement_, who);
  detail::check_epoch_length(static_cast<uint64_t>(num_samples_), "num_samples", who,
                             "num_samples = " + std::to_string(num_samples_),
                             "draw at most " + std::to_string(detail::kMaxEpochIndices) +
                                 " per epoch, and run more epochs");
}

std::vector<int64_t> WeightedRandomSampler::indices(size_t dataset_size, uint64_t epoch) {
  check_fits(dataset_size);
  return detail::multinomial_draw(weights_, num_samples_, replacement_, seed_ + epoch);
}

void WeightedRandomSampler::check_fits(size_t dataset_size) const {
  detail::check_one_weight_per_sample(weights_.size(), dataset_size, "WeightedRandomSampler");
}

}  // namespace mploader
