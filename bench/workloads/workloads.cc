// Workload datasets: synthetic fixed-size samples and in-memory Fashion-MNIST.
#include "bench/workloads/workloads.h"

#include "bench/plugin.h"
#include "bench/workloads/fmnist_idx.h"
#include "bench/workloads/io_latency.h"
#include "bench/workloads/jpeg_dataset.h"
#include "bench/workloads/stream_corpus.h"
#include "bench/workloads/tar_workload.h"

#include <ATen/ops/full.h>
#include <ATen/ops/scalar_tensor.h>
#include <mploader/registry.h>

#include <cstring>
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

std::optional<mploader::SampleLayout> SyntheticDataset::sample_layout() const {
  return mploader::SampleLayout{{"image", at::kByte, shape_}, {"label", at::kLong, {}}};
}

void SyntheticDataset::write(int64_t index, mploader::SampleWriter& out) {
  check_index(index, size_, "synthetic");
  std::memset(out.bytes(0), static_cast<int>(index % 256), out.field(0).nbytes());
  *out.data<int64_t>(1) = index % 10;
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
  images_ = split.images.unsqueeze(1).to(at::kFloat).div_(255).contiguous();  // [N, 1, 28, 28]
  labels_ = split.labels.contiguous();
  image_data_ = images_.data_ptr<float>();
  label_data_ = labels_.data_ptr<int64_t>();
}

namespace {
constexpr size_t kFmnistPixels = 28 * 28;
}  // namespace

std::optional<mploader::SampleLayout> FmnistDataset::sample_layout() const {
  return mploader::SampleLayout{{"image", at::kFloat, {1, 28, 28}}, {"label", at::kLong, {}}};
}

void FmnistDataset::write(int64_t index, mploader::SampleWriter& out) {
  check_index(index, size(), "fmnist");
  std::memcpy(out.data<float>(0), image_data_ + static_cast<size_t>(index) * kFmnistPixels,
              kFmnistPixels * sizeof(float));
  *out.data<int64_t>(1) = label_data_[index];
}

void FmnistDataset::write_batch(const int64_t* indices, size_t count, mploader::BatchWriter& out) {
  float* images = out.data<float>(0);
  int64_t* labels = out.data<int64_t>(1);
  for (size_t r = 0; r < count; ++r) {
    check_index(indices[r], size(), "fmnist");
    const auto i = static_cast<size_t>(indices[r]);
    std::memcpy(images + r * kFmnistPixels, image_data_ + i * kFmnistPixels,
                kFmnistPixels * sizeof(float));
    labels[r] = label_data_[i];
  }
}

mploader::Sample FmnistDataset::get(int64_t index) {
  check_index(index, size(), "fmnist");
  return mploader::Sample{
      {"image", images_[index]},
      {"label", labels_[index]},
  };
}

std::shared_ptr<mploader::Dataset> make_workload(const RunConfig& config) {
  if (!config.dataset_lib.empty()) {
    return make_plugin_dataset(load_dataset_plugin(config.dataset_lib), config.workload,
                               config.dataset_config);
  }
  if (config.workload == "synthetic") {
    const auto size = static_cast<size_t>(config.batches * config.batch_size);
    return std::make_shared<SyntheticDataset>(config.sample_shape, size);
  }
  if (config.workload == "fmnist") return std::make_shared<FmnistDataset>(config.data_dir);
  if (config.workload == "jpeg") return make_jpeg_dataset(config.jpeg_dir);
  if (config.workload == "stream") return make_stream_dataset(config.corpus, config.context);
  if (config.workload == "tar") return make_tar_dataset(config.tar_dir);
  if (config.workload == "io") {
    return std::make_shared<IoLatencyDataset>(
        static_cast<size_t>(config.batches * config.batch_size),
        std::chrono::microseconds(config.io_latency_us),
        std::chrono::microseconds(config.io_cpu_us));
  }
  throw UsageError("--workload: unknown workload '" + config.workload +
                   "'; use synthetic, fmnist, jpeg, stream, tar or io");
}

}  // namespace bench
