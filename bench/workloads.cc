// Workload datasets: synthetic fixed-size samples and in-memory Fashion-MNIST.
#include "workloads.h"

#include "fmnist_idx.h"
#include "jpeg_dataset.h"

#include <ATen/ops/full.h>
#include <ATen/ops/scalar_tensor.h>
#include <mploader/registry.h>

#include <sstream>

#include <stdexcept>

namespace bench {

namespace {
void check_index(int64_t index, size_t size, const char* workload) {
  if (index < 0 || static_cast<size_t>(index) >= size) {
    throw std::out_of_range(std::string(workload) + ": index " + std::to_string(index) +
                            " out of range [0, " + std::to_string(size) + ")");
  }
}
}  // namespace

SyntheticDataset::SyntheticDataset(std::vector<int64_t> shape, size_t size)
    : shape_(std::move(shape)), size_(size) {}

mploader::Sample SyntheticDataset::get(int64_t index) {
  check_index(index, size_, "synthetic");
  return mploader::Sample{
      {"image", at::full(shape_, index % 256, at::kByte)},
      {"label", at::scalar_tensor(index % 10, at::kLong)},
  };
}

std::optional<mploader::DatasetRecipe> SyntheticDataset::recipe() const {
  std::string dims;
  for (int64_t d : shape_) dims += (dims.empty() ? "" : ",") + std::to_string(d);
  return mploader::DatasetRecipe{"bench-synthetic", std::to_string(size_) + " " + dims};
}

// Spawned and forkserver workers rebuild the workloads from these.
MPLOADER_REGISTER_DATASET("bench-synthetic", [](const std::string& config) {
  std::istringstream in(config);
  size_t size = 0;
  std::string dims;
  in >> size >> dims;
  std::vector<int64_t> shape;
  std::istringstream parts(dims);
  for (std::string d; std::getline(parts, d, ',');) shape.push_back(std::stoll(d));
  return std::make_shared<SyntheticDataset>(shape, size);
});
MPLOADER_REGISTER_DATASET("bench-fmnist", [](const std::string& dir) {
  return std::make_shared<FmnistDataset>(dir);
});

FmnistDataset::FmnistDataset(const std::string& data_dir) : data_dir_(data_dir) {
  FmnistSplit split = load_fmnist(data_dir, "train");
  // Converted once here, as an in-memory dataset would be: per sample, get() then only indexes,
  // so the run measures the loaders rather than libtorch's per-op cost of a uint8-to-float
  // conversion (about 30k instructions per 784-pixel image, identical on every side).
  images_ = split.images.unsqueeze(1).to(at::kFloat).div_(255);  // [N, 1, 28, 28]
  labels_ = split.labels;
}

mploader::Sample FmnistDataset::get(int64_t index) {
  check_index(index, size(), "fmnist");
  return mploader::Sample{
      {"image", images_[index]},
      {"label", labels_[index]},
  };
}

std::shared_ptr<mploader::Dataset> make_workload(const RunConfig& config) {
  if (config.workload == "synthetic") {
    const auto size = static_cast<size_t>(config.batches * config.batch_size);
    return std::make_shared<SyntheticDataset>(config.sample_shape, size);
  }
  if (config.workload == "fmnist") return std::make_shared<FmnistDataset>(config.data_dir);
  if (config.workload == "jpeg") return std::make_shared<JpegDataset>(config.jpeg_dir);
  throw UsageError("--workload: unknown workload '" + config.workload +
                   "'; use synthetic, fmnist or jpeg");
}

}  // namespace bench
