// Reader for the Fashion-MNIST IDX files (gzipped, as Debian's dataset-fashion-mnist ships
// them). Every problem with a file (missing, truncated, corrupt, wrong shape) is thrown as a
// std::runtime_error that names the file, what was expected and what was found, and the fix.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

namespace bench {

inline constexpr const char* kDefaultFmnistDir = "/usr/share/datasets/fashion-mnist";

struct FmnistSplit {
  at::Tensor images;  // uint8 [N, 28, 28]
  at::Tensor labels;  // int64 [N], each in [0, 9]
};

// Reads <dir>/<split>-images-idx3-ubyte.gz and <dir>/<split>-labels-idx1-ubyte.gz;
// split is "train" (60000 samples) or "t10k" (10000).
FmnistSplit load_fmnist(const std::string& dir, const std::string& split);

}  // namespace bench
