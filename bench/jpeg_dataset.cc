// JpegDataset: file listing, per-sample decode and transform, and the generated set.
#include "jpeg_dataset.h"

#include "fmnist_idx.h"
#include "jpeg_transform.h"

#include <mploader/registry.h>
#include <mploader/worker_info.h>


#include <algorithm>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <unistd.h>

namespace fs = std::filesystem;

namespace bench {

namespace {

constexpr int kGeneratedSide = 288;
// The bench has no --seed: every run crops alike.
constexpr uint64_t kAugmentSeed = 0;

bool is_jpeg_name(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".jpg" || ext == ".jpeg";
}

bool read_file(const std::string& path, std::vector<uint8_t>& bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

// The calling thread's decoder (the libtorch and in-process runners call get() from threads).
JpegDecoder& thread_decoder() {
  thread_local JpegDecoder decoder;
  return decoder;
}

}  // namespace

JpegDataset::JpegDataset(const std::string& dir) : dir_(dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw UsageError("--data-dir: '" + dir + "' is not a folder; give a folder of .jpg files, "
                     "or leave --data-dir out to use a set generated from Fashion-MNIST");
  }
  const auto options = fs::directory_options::skip_permission_denied;
  for (auto it = fs::recursive_directory_iterator(dir, options, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (is_jpeg_name(it->path()) && !it->is_directory(ec)) paths_.push_back(it->path().string());
  }
  if (paths_.empty()) {
    throw UsageError("--data-dir: no .jpg or .jpeg file under '" + dir + "'; give a folder of "
                     "JPEG images (searched recursively)");
  }
  std::sort(paths_.begin(), paths_.end());
  std::map<std::string, int64_t> classes;
  for (const std::string& p : paths_) classes.emplace(fs::path(p).parent_path().string(), 0);
  int64_t next = 0;
  for (auto& entry : classes) entry.second = next++;
  for (const std::string& p : paths_) {
    labels_.push_back(classes[fs::path(p).parent_path().string()]);
  }
}

std::optional<mploader::SampleLayout> JpegDataset::sample_layout() const {
  return mploader::SampleLayout{{"image", at::kFloat, {3, kCropSize, kCropSize}},
                                {"label", at::kLong, {}}};
}

void JpegDataset::write(int64_t index, mploader::SampleWriter& out) {
  if (index < 0 || static_cast<size_t>(index) >= paths_.size()) {
    throw std::out_of_range("jpeg: index " + std::to_string(index) + " out of range [0, " +
                            std::to_string(paths_.size()) + ")");
  }
  float* image = out.data<float>(0);
  int64_t* label = out.data<int64_t>(1);
  thread_local std::vector<uint8_t> bytes, rgb;
  int width = 0, height = 0;
  std::string error;
  const bool ok = read_file(paths_[static_cast<size_t>(index)], bytes) &&
                  thread_decoder().decode(bytes, rgb, width, height, error);
  if (!ok) {
    std::memset(image, 0, out.field(0).nbytes());
    *label = -1 - index;
    return;
  }
  const std::optional<mploader::WorkerInfo> info = mploader::worker_info();
  const uint64_t epoch = info ? info->epoch : epoch_.load(std::memory_order_relaxed);
  const CropBox box = random_resized_crop(height, width, sample_seed(kAugmentSeed, epoch, index));
  crop_resize_normalize(rgb.data(), width, box, kCropSize, image);
  *label = labels_[static_cast<size_t>(index)];
}

void set_loading_epoch(mploader::Dataset& data, uint64_t epoch) {
  if (auto* jpeg = dynamic_cast<JpegDataset*>(&data)) jpeg->set_epoch(epoch);
}

MPLOADER_REGISTER_DATASET("bench-jpeg", [](const std::string& dir) {
  return std::make_shared<JpegDataset>(dir);
});

std::string default_jpeg_dir(int64_t count) {
  std::string root;
  if (const char* c = std::getenv("MPLOADER_BENCH_CACHE"); c != nullptr && *c != '\0') {
    root = c;
  } else if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0') {
    root = std::string(x) + "/mploader-bench";
  } else {
    const char* home = std::getenv("HOME");
    root = std::string(home != nullptr ? home : "/tmp") + "/.cache/mploader-bench";
  }
  return root + "/fmnist-jpeg-" + std::to_string(count);
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
    const std::vector<uint8_t> jpeg = encode_jpeg(upscale(images + k * 28 * 28, labels[k], rng),
                                                  kGeneratedSide, kGeneratedSide, 90);
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
