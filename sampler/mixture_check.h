// The checks of a mixture's options, shared by MixtureSampler and StreamMixture: one wording
// for every bad weight, size and epoch length.
#pragma once

#include <mploader/mixture.h>

#include <cstddef>
#include <string>
#include <vector>

namespace mploader::detail {

// The sources' probabilities (the weights divided by their sum), after checking `options`
// against sources of `sizes` samples; throws OptionError naming `who`, the option and the fix
// (MixtureSampler's constructor lists the cases).
std::vector<double> mixture_probabilities(const std::vector<size_t>& sizes,
                                          const MixtureOptions& options, const std::string& who);

}  // namespace mploader::detail
