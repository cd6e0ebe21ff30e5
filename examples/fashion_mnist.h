// Fashion-MNIST for the example training loops: the IDX files read into memory, checked, and
// served one sample at a time as an mploader::Dataset.
//
// Thread-safety: a FashionMnist is read-only after construction; every worker process gets
// its own copy (fork) or rebuilds it from its recipe (spawn).
#pragma once

#include <mploader/dataset.h>

#include <ATen/core/Tensor.h>

#include <array>
#include <string>

namespace examples {

// Where Debian's dataset-fashion-mnist package puts the files.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// One split: images uint8 [N, 28, 28], labels int64 [N] in [0, 9].
struct FashionMnistSplit {
  at::Tensor images;
  at::Tensor labels;
};

// Reads <dir>/<split>-images-idx3-ubyte and <dir>/<split>-labels-idx1-ubyte, each either plain
// or gzipped (".gz" added); split is "train" or "t10k". Throws std::runtime_error naming the
// file, what it holds against what its header announced, and the fix, when a file is missing,
// truncated, too long, corrupt, or the two files disagree.
FashionMnistSplit read_fashion_mnist(const std::string& dir, const std::string& split);

// Samples: "image" float [784] (pixels scaled to [0, 1], then normalized by the training set's
// mean 0.2860 and deviation 0.3530) and "label" int64 [] (0-dimensional; batches stack it to [B]).
// Written in place: each normalized pixel goes straight into the batch (get() comes from it).
class FashionMnist : public mploader::Dataset {
 public:
  FashionMnist(const std::string& dir, const std::string& split);
  size_t size() const override { return static_cast<size_t>(data_.labels.size(0)); }
  std::optional<mploader::SampleLayout> sample_layout() const override;
  void write(int64_t index, mploader::SampleWriter& out) override;
  // Rebuilt by the factory "fashion-mnist" from "<split>:<dir>" (start_method spawn).
  std::optional<mploader::DatasetRecipe> recipe() const override;
  const FashionMnistSplit& data() const { return data_; }

 private:
  std::string dir_;
  std::string split_;
  FashionMnistSplit data_;
  std::array<float, 256> normalized_;  // each pixel value normalized as normalized_images() does
};

// The whole split as a batch like the Loader's: images float [N, 784] normalized as above.
at::Tensor normalized_images(const FashionMnistSplit& split);

}  // namespace examples
