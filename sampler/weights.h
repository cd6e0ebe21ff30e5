// Checks and draws shared by the samplers that take weights (WeightedRandomSampler,
// DistributedWeightedSampler, MixtureSampler): one wording for every bad weight, and one
// torch.multinomial call, so that every weighted sampler draws what PyTorch would.
//
// Free functions; no state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mploader::detail {

// `w` as a person writes it: 0.5, 1, 1e-06, nan.
std::string weight_text(double w);

// Throws OptionError(option) naming `who` for no weights, a negative, NaN or infinite weight
// (its position and value) or all weights zero. Returns how many weights are positive.
size_t check_weights(const std::vector<double>& weights, const std::string& option,
                     const std::string& who);

// `weights` (checked by check_weights) in the same proportions with a finite sum: as they are
// when their sum is finite, which keeps every draw the one PyTorch makes; divided by the
// largest when the sum overflows (1e308 + 1e308 is inf, and every weight / inf is 0). Throws
// OptionError(option) naming `who` if even that sum is not finite.
std::vector<double> summable_weights(std::vector<double> weights, const std::string& option,
                                     const std::string& who);

// Throws OptionError("num_samples") when `num_samples` indices cannot be drawn from `weights`
// (num_samples < 1; without replacement, more than `positive` weights; over 2^24 weights, the
// most torch.multinomial takes).
void check_draw(size_t num_weights, size_t positive, int64_t num_samples, bool replacement,
                const std::string& who);

// torch.multinomial(torch.as_tensor(weights, dtype=torch.double), num_samples, replacement,
// generator=torch.Generator().manual_seed(seed)), as int64 indices.
std::vector<int64_t> multinomial_draw(const std::vector<double>& weights, int64_t num_samples,
                                      bool replacement, uint64_t seed);

// Throws OptionError("sampler") when `who` was given `count` weights for a dataset of another
// size.
void check_one_weight_per_sample(size_t count, size_t dataset_size, const std::string& who);

}  // namespace mploader::detail
