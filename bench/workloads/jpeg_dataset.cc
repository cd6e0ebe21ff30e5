// The jpeg workload's dataset (the library's ImageFolder) and its generated set.
#include "bench/workloads/jpeg_dataset.h"

#include "bench/run_config.h"
#include "bench/workloads/fmnist_idx.h"

#include <mploader/errors.h>
#include <mploader/vision/encode.h>
#include <mploader/vision/image_folder.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <unistd.h>

namespace fs = std::filesystem;

namespace bench {

namespace {

constexpr int kGeneratedSide = 288;

}  // namespace

std::shared_ptr<mploader::Dataset> make_jpeg_dataset(const std::string& dir) {
  using namespace mploader::vision;
  ImageFolderOptions options;
  options.on_bad_image = OnBadImage::kSkip;
  options.seed = 0;  // the bench has no --seed: every run and every loader crops alike
  try {
    return std::make_shared<ImageFolder>(
        dir,
        Compose({RandomResizedCrop(224), RandomHorizontalFlip(), ToTensor(),
                 Normalize({0.485, 0.456, 0.406}, {0.229, 0.224, 0.225})}),
        options);
  } catch (const mploader::OptionError& e) {
    throw UsageError(std::string("--data-dir: ") + e.what() +
                     "; or leave --data-dir out to use a set generated from Fashion-MNIST");
  }
}

std::string jpeg_path(const mploader::Dataset& data, int64_t index) {
  const auto* folder = dynamic_cast<const mploader::vision::ImageFolder*>(&data);
  return folder != nullptr ? folder->path(index) : "#" + std::to_string(index);
}

void set_loading_epoch(mploader::Dataset& data, uint64_t epoch) {
  if (auto* folder = dynamic_cast<mploader::vision::ImageFolder*>(&data)) folder->set_epoch(epoch);
}

std::string bench_cache_dir() {
  std::string root;
  if (const char* c = std::getenv("MPLOADER_BENCH_CACHE"); c != nullptr && *c != '\0') {
    root = c;
  } else if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0') {
    root = std::string(x) + "/mploader-bench";
  } else {
    const char* home = std::getenv("HOME");
    root = std::string(home != nullptr ? home : "/tmp") + "/.cache/mploader-bench";
  }
  return root;
}

std::string default_jpeg_dir(int64_t count) {
  return bench_cache_dir() + "/fmnist-jpeg-" + std::to_string(count);
}

namespace {

// A 28 x 28 grey image as kGeneratedSide^2 RGB: bilinear upscale, a tint per class and mild
// noise, so the JPEGs have the detail (and decode cost) of small photos.
std::vector<uint8_t> upscale(const uint8_t* gray, int64_t label, std::mt19937& rng) {
  const int n = kGeneratedSide;
  std::vector<uint8_t> rgb(static_cast<size_t>(n) * n * 3);
  std::uniform_int_distribution<int> noise(-12, 12);
  for (int y = 0; y < n; ++y) {
    const float sy = std::max((y + 0.5f) * 28 / n - 0.5f, 0.0f);
    const int y0 = std::min(static_cast<int>(sy), 27), y1 = std::min(y0 + 1, 27);
    for (int x = 0; x < n; ++x) {
      const float sx = std::max((x + 0.5f) * 28 / n - 0.5f, 0.0f);
      const int x0 = std::min(static_cast<int>(sx), 27), x1 = std::min(x0 + 1, 27);
      const float fx = sx - x0, fy = sy - y0;
      const float top = gray[y0 * 28 + x0] + fx * (gray[y0 * 28 + x1] - gray[y0 * 28 + x0]);
      const float bot = gray[y1 * 28 + x0] + fx * (gray[y1 * 28 + x1] - gray[y1 * 28 + x0]);
      const float v = top + fy * (bot - top);
      for (int c = 0; c < 3; ++c) {
        const float tint = 0.6f + 0.4f * static_cast<float>((label + c * 3) % 10) / 9.0f;
        const int value = static_cast<int>(v * tint) + 20 * c + noise(rng);
        rgb[(static_cast<size_t>(y) * n + x) * 3 + c] =
            static_cast<uint8_t>(std::clamp(value, 0, 255));
      }
    }
  }
  return rgb;
}

void write_set(const std::string& dir, const std::string& fmnist_dir, int64_t count) {
  const FmnistSplit split = load_fmnist(fmnist_dir, "train");
  const int64_t available = split.images.size(0);
  const uint8_t* images = split.images.data_ptr<uint8_t>();
  const int64_t* labels = split.labels.data_ptr<int64_t>();
  std::mt19937 rng(1234);
  for (int64_t c = 0; c < 10; ++c) fs::create_directories(dir + "/" + std::to_string(c));
  for (int64_t i = 0; i < count; ++i) {
    const int64_t k = i % available;
    const std::vector<uint8_t> rgb = upscale(images + k * 28 * 28, labels[k], rng);
    const std::vector<uint8_t> jpeg =
        mploader::vision::encode_jpeg(rgb.data(), kGeneratedSide, kGeneratedSide, 3, 90);
    char name[32];
    std::snprintf(name, sizeof name, "/%06lld.jpg", static_cast<long long>(i));
    const std::string path = dir + "/" + std::to_string(labels[k]) + name;
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(jpeg.data()),
              static_cast<std::streamsize>(jpeg.size()));
    if (!out) {
      throw std::runtime_error("jpeg: cannot write " + path +
                               "; check the folder's free space and permissions");
    }
  }
}

}  // namespace

void ensure_jpeg_set(const std::string& dir, const std::string& fmnist_dir, int64_t count) {
  std::error_code ec;
  if (fs::is_directory(dir, ec)) return;
  const fs::path target(dir);
  fs::create_directories(target.parent_path(), ec);
  const std::string tmp = dir + ".tmp-" + std::to_string(::getpid());
  fs::remove_all(tmp, ec);
  try {
    write_set(tmp, fmnist_dir, count);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  fs::rename(tmp, target, ec);  // another bench may have won the race: its set is as good
  if (ec) fs::remove_all(tmp, ec);
  if (!fs::is_directory(dir, ec)) {
    throw std::runtime_error("jpeg: cannot create the generated set in " + dir +
                             "; set MPLOADER_BENCH_CACHE to a writable folder");
  }
}

}  // namespace bench
