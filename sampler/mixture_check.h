// What MixtureSampler and StreamMixture share: the checks of a mixture's options (one wording
// for every bad weight, size and epoch length) and the pick of a draw's source.
#pragma once

#include <mploader/mixture.h>

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <string>
#include <vector>

namespace mploader::detail {

// The sources' probabilities (the weights divided by their sum), after checking `options`
// against sources of `sizes` samples; throws OptionError naming `who`, the option and the fix
// (MixtureSampler's constructor lists the cases).
std::vector<double> mixture_probabilities(const std::vector<size_t>& sizes,
                                          const MixtureOptions& options, const std::string& who);

// Picks a draw's source from u in [0, 1): cumulative probabilities, the last positive one
// exactly 1, and the pick held to that last source too, so that no rounding in the
// probabilities can send a draw past the end of the sources.
class SourcePicker {
 public:
  explicit SourcePicker(const std::vector<double>& p) : cdf_(p.size()) {
    std::partial_sum(p.begin(), p.end(), cdf_.begin());
    for (size_t k = 0; k < p.size(); ++k) {
      if (p[k] > 0) last_ = k;
    }
    for (size_t k = last_; k < cdf_.size(); ++k) cdf_[k] = 1.0;
  }
  size_t pick(double u) const {
    const auto k = static_cast<size_t>(std::upper_bound(cdf_.begin(), cdf_.end(), u) -
                                       cdf_.begin());
    return std::min(k, last_);
  }

 private:
  std::vector<double> cdf_;
  size_t last_ = 0;  // the last source with a positive probability
};

}  // namespace mploader::detail
