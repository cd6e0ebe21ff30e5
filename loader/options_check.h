// Validation of LoaderOptions: every wrong value becomes an OptionError that names the option,
// the value, and what to use instead, before any shared memory or process exists.
#pragma once

#include <mploader/dataset.h>
#include <mploader/options.h>

namespace mploader::detail {

// Throws OptionError. Fills in defaults (collate, sampler) in the returned copy.
LoaderOptions checked_options(const Dataset* dataset, LoaderOptions options);

}  // namespace mploader::detail
