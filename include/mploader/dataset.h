/// @file
/// Dataset: the user's data, read one sample at a time by index.
#pragma once

#include <mploader/tensor_dict.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace mploader {

/// How to build a dataset again in a fresh process (start_method spawn): the name of a factory
/// registered with MPLOADER_REGISTER_DATASET (mploader/registry.h) and the text it is given.
struct DatasetRecipe {
  std::string factory;  ///< The name given to MPLOADER_REGISTER_DATASET.
  std::string config;   ///< The text its factory is called with (a path, a JSON object, ...).
};

/// Subclass this. With num_workers > 0 every worker process has its own copy of the object
/// (fork copies it), so get() needs no locking; per-process resources such as file handles
/// should be opened lazily on first use in the worker. With num_workers > 0 the training
/// process never calls get(): even the read of sample 0 that sizes the ring slots runs in a
/// short-lived worker process, so a lazily opened handle is never inherited by the workers.
class Dataset {
 public:
  virtual ~Dataset() = default;
  /// Number of samples; indices passed to get() are in [0, size()).
  virtual size_t size() const = 0;
  /// One sample as named tensors. Throwing here reaches the training loop as WorkerError.
  /// In worker processes it runs under c10::InferenceMode (its tensors are copied into shared
  /// memory and dropped, so autograd bookkeeping would be pure cost): code here cannot record
  /// gradients. With num_workers = 0 it runs in the caller's own mode.
  virtual Sample get(int64_t index) = 0;
  /// How a spawned worker rebuilds this dataset; nullopt (the default) means it cannot be, and
  /// start_method spawn is refused at construction.
  virtual std::optional<DatasetRecipe> recipe() const { return std::nullopt; }
};

}  // namespace mploader
