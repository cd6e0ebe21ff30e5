#include "sampler/weights.h"

#include <mploader/errors.h>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

namespace mploader::detail {
namespace {

// torch.multinomial refuses more categories than this ("number of categories cannot exceed
// 2^24"); saying so before libtorch does names the input and what to do.
constexpr size_t kMaxCategories = size_t{1} << 24;

}  // namespace

std::string weight_text(double w) {
  std::ostringstream s;
  s << w;
  return s.str();
}

size_t check_weights(const std::vector<double>& weights, const std::string& option,
                     const std::string& who) {
  if (weights.empty()) {
    throw OptionError(option, "mploader: " + who + " was given no " + option +
                                  "; give one non-negative weight per choice");
  }
  size_t positive = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    const double w = weights[i];
    if (!std::isfinite(w) || w < 0) {
      throw OptionError(option, "mploader: " + who + ": " + option + "[" + std::to_string(i) +
                                    "] is " + weight_text(w) + "; every weight must be a finite "
                                    "number >= 0 (0 leaves that choice out)");
    }
    if (w > 0) ++positive;
  }
  if (positive == 0) {
    throw OptionError(option, "mploader: " + who + ": all " + std::to_string(weights.size()) +
                                  " " + option + " are 0, so nothing can be drawn; give at "
                                  "least one a positive weight");
  }
  return positive;
}

std::vector<double> summable_weights(std::vector<double> weights, const std::string& option,
                                     const std::string& who) {
  double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  if (std::isfinite(sum)) return weights;
  const double largest = *std::max_element(weights.begin(), weights.end());
  for (double& w : weights) w /= largest;
  sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  if (std::isfinite(sum) && sum > 0) return weights;
  throw OptionError(option, "mploader: " + who + ": the " + option + " add up to " +
                                weight_text(sum) + " even divided by the largest (" +
                                weight_text(largest) + "); give weights of a sane scale "
                                "(only their proportions matter)");
}

void check_draw(size_t num_weights, size_t positive, int64_t num_samples, bool replacement,
                const std::string& who) {
  if (num_samples < 1) {
    throw OptionError("num_samples", "mploader: " + who + ": num_samples is " +
                                         std::to_string(num_samples) +
                                         "; it must be 1 or more indices per epoch");
  }
  if (!replacement && static_cast<uint64_t>(num_samples) > positive) {
    throw OptionError("num_samples",
                      "mploader: " + who + ": num_samples " + std::to_string(num_samples) +
                          " without replacement is more than the " + std::to_string(positive) +
                          " samples with a positive weight; draw at most " +
                          std::to_string(positive) + ", or set replacement = true");
  }
  if (num_weights > kMaxCategories) {
    throw OptionError("weights", "mploader: " + who + " has " + std::to_string(num_weights) +
                                     " weights, more than the 2^24 = 16777216 torch.multinomial "
                                     "draws from; weight groups of samples instead (a mixture "
                                     "over sources, MixtureSampler)");
  }
}

std::vector<int64_t> multinomial_draw(const std::vector<double>& weights, int64_t num_samples,
                                      bool replacement, uint64_t seed) {
  at::Generator generator = at::detail::createCPUGenerator(seed);
  // from_blob reads the caller's vector; multinomial does not write its input.
  const at::Tensor w = at::from_blob(const_cast<double*>(weights.data()),
                                     {static_cast<int64_t>(weights.size())}, at::kDouble);
  const at::Tensor drawn = at::multinomial(w, num_samples, replacement, generator);
  const int64_t* p = drawn.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + drawn.numel());
}

void check_one_weight_per_sample(size_t count, size_t dataset_size, const std::string& who) {
  if (count == dataset_size) return;
  throw OptionError("sampler", "mploader: " + who + " has " + std::to_string(count) +
                                   " weights for a dataset of " + std::to_string(dataset_size) +
                                   " samples; give exactly one weight per sample");
}

}  // namespace mploader::detail
