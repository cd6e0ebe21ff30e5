// Dataset: the user's data, read one sample at a time by index.
#pragma once

#include <mploader/tensor_dict.h>

#include <cstddef>
#include <cstdint>

namespace mploader {

// Subclass this. With num_workers > 0 every worker process has its own copy of the object
// (fork copies it), so get() needs no locking; per-process resources such as file handles
// should be opened lazily on first use in the worker.
class Dataset {
 public:
  virtual ~Dataset() = default;
  // Number of samples; indices passed to get() are in [0, size()).
  virtual size_t size() const = 0;
  // One sample as named tensors. Throwing here reaches the training loop as WorkerError.
  virtual Sample get(int64_t index) = 0;
};

}  // namespace mploader
