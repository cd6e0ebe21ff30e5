// The training loop of the examples that train an MLP on Fashion-MNIST from files (tar shards,
// an HDF5 file, Parquet shards): 784 -> 256 -> 10, Adam at 1e-3 and cross-entropy, then after
// each epoch the test accuracy and whether every training sample arrived exactly once.
#pragma once

#include <mploader/batch.h>
#include <mploader/loader.h>

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <functional>
#include <string>

namespace examples {

// How a batch feeds the model.
struct MlpBatches {
  std::function<at::Tensor(const mploader::Batch&)> inputs;  // float [B, 784], normalized
  std::string label;                                         // the int64 [B] label field
};

// Trains `epochs` epochs from `train` (over `train_size` samples), testing on `test` after each,
// and prints a line an epoch. Returns 0 when the last test accuracy is at least `min_accuracy`
// and every training sample came once in every epoch, else 1. Seed torch before the call for a
// repeatable model.
int train_mlp(mploader::Loader& train, size_t train_size, mploader::Loader& test,
              const MlpBatches& batches, int epochs, double min_accuracy);

}  // namespace examples
