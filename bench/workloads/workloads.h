// The datasets mploader-bench loads, as mploader::Dataset subclasses that every runner shares.
// Both are safe for concurrent get() from several threads (the libtorch and in-process runners
// call it from threads; mploader's workers each have their own copy after fork).
#pragma once

#include "bench/run_config.h"

#include <mploader/dataset.h>

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace bench {

// "image": uint8 of `shape`, every element index % 256 (the work of torch.full);
// "label": int64 scalar index % 10.
class SyntheticDataset : public mploader::Dataset {
 public:
  SyntheticDataset(std::vector<int64_t> shape, size_t size);
  size_t size() const override { return size_; }
  mploader::Sample get(int64_t index) override;
  // In place: the same bytes, each written once (a memset of the row).
  std::optional<mploader::SampleLayout> sample_layout() const override;
  void write(int64_t index, mploader::SampleWriter& out) override;
  // "bench-synthetic": "<size> <d0,d1,...>", for --start spawn and forkserver.
  std::optional<mploader::DatasetRecipe> recipe() const override;

 private:
  std::vector<int64_t> shape_;
  size_t size_;
};

// Fashion-MNIST train split, read into memory once at construction (before any fork, so the
// workers share it). "image": float32 [1, 28, 28] in [0, 1]; "label": int64 scalar.
class FmnistDataset : public mploader::Dataset {
 public:
  explicit FmnistDataset(const std::string& data_dir);
  size_t size() const override { return static_cast<size_t>(labels_.size(0)); }
  mploader::Sample get(int64_t index) override;
  // In place: one memcpy per row and field, and a whole batch as one gather (PyTorch's
  // __getitems__ on the same data is the peer).
  std::optional<mploader::SampleLayout> sample_layout() const override;
  void write(int64_t index, mploader::SampleWriter& out) override;
  void write_batch(const int64_t* indices, size_t count, mploader::BatchWriter& out) override;
  // "bench-fmnist": the data directory.
  std::optional<mploader::DatasetRecipe> recipe() const override {
    return mploader::DatasetRecipe{"bench-fmnist", data_dir_};
  }

 private:
  std::string data_dir_;
  at::Tensor images_;  // float32 [N, 1, 28, 28]
  at::Tensor labels_;  // int64 [N]
  const float* image_data_ = nullptr;  // images_'s, for the in-place copies
  const int64_t* label_data_ = nullptr;
};

// The dataset of `config.workload`. Synthetic holds exactly batches * batch_size samples;
// jpeg reads config.jpeg_dir (jpeg_dataset.h); stream, config.corpus (stream_corpus.h); tar,
// config.tar_dir (tar_workload.h); a --dataset from config.dataset_lib (plugin.h).
std::shared_ptr<mploader::Dataset> make_workload(const RunConfig& config);

}  // namespace bench
