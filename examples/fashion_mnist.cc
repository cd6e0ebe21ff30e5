// Fashion-MNIST IDX reader (plain or gzipped, through zlib's gzread, which reads both) and the
// Dataset of the examples. Every header field and the data length are checked against what the
// file really holds, so a truncated download is an error naming the file, not a short epoch.
#include "fashion_mnist.h"

#include <mploader/registry.h>

#include <ATen/ops/arange.h>
#include <ATen/ops/empty.h>
#include <zlib.h>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace examples {
namespace {

constexpr uint32_t kImagesMagic = 0x00000803;  // unsigned bytes, 3 dimensions
constexpr uint32_t kLabelsMagic = 0x00000801;  // unsigned bytes, 1 dimension
constexpr int64_t kSide = 28;
constexpr const char* kFix =
    ". Fix: apt-get install --reinstall dataset-fashion-mnist, or pass --data-dir DIR holding "
    "intact train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte and "
    "t10k-labels-idx1-ubyte (plain or .gz)";

bool is_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// One IDX file open for reading; errors name it.
class IdxReader {
 public:
  IdxReader(const std::string& dir, const std::string& name) {
    path_ = dir + "/" + name;
    if (!is_file(path_)) path_ += ".gz";
    if (!is_file(path_)) {
      throw std::runtime_error(dir + "/" + name + "(.gz): no such file" + kFix);
    }
    gz_ = gzopen(path_.c_str(), "rb");
    if (gz_ == nullptr) fail(std::string("cannot open (") + std::strerror(errno) + ")");
  }
  ~IdxReader() { gzclose(gz_); }
  IdxReader(const IdxReader&) = delete;
  IdxReader& operator=(const IdxReader&) = delete;

  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(path_ + ": " + what + kFix);
  }
  // Reads up to n bytes; fewer only at the end of the data.
  int64_t read(void* out, int64_t n) {
    int64_t done = 0;
    while (done < n) {
      const int got = gzread(gz_, static_cast<char*>(out) + done,
                             static_cast<unsigned>(std::min<int64_t>(n - done, 1 << 24)));
      if (got < 0) {
        int code = 0;
        fail(std::string("corrupt compressed data (") + gzerror(gz_, &code) + ")");
      }
      if (got == 0) break;
      done += got;
    }
    return done;
  }
  uint32_t u32(const char* field) {
    uint8_t b[4];
    if (read(b, 4) != 4) fail(std::string("truncated header: no ") + field);
    return uint32_t(b[0]) << 24 | uint32_t(b[1]) << 16 | uint32_t(b[2]) << 8 | b[3];
  }
  // Exactly n bytes of data, then the end of the file.
  void data(void* out, int64_t n) {
    const int64_t got = read(out, n);
    if (got != n) {
      fail("truncated: the header announces " + std::to_string(n) + " data bytes, the file holds " +
           std::to_string(got));
    }
    char extra;
    if (read(&extra, 1) != 0) {
      fail("longer than its header says (" + std::to_string(n) + " data bytes)");
    }
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  gzFile gz_ = nullptr;
};

}  // namespace

FashionMnistSplit read_fashion_mnist(const std::string& dir, const std::string& split) {
  IdxReader images(dir, split + "-images-idx3-ubyte");
  if (const uint32_t m = images.u32("magic number"); m != kImagesMagic) {
    images.fail("magic number " + std::to_string(m) + ", expected " + std::to_string(kImagesMagic) +
                " (an IDX file of 3-dimensional uint8 images)");
  }
  const int64_t n = images.u32("image count");
  const int64_t rows = images.u32("row count"), cols = images.u32("column count");
  if (rows != kSide || cols != kSide) {
    images.fail("images are " + std::to_string(rows) + "x" + std::to_string(cols) +
                ", expected 28x28");
  }
  FashionMnistSplit out;
  out.images = at::empty({n, kSide, kSide}, at::kByte);
  images.data(out.images.data_ptr(), n * kSide * kSide);

  IdxReader labels(dir, split + "-labels-idx1-ubyte");
  if (const uint32_t m = labels.u32("magic number"); m != kLabelsMagic) {
    labels.fail("magic number " + std::to_string(m) + ", expected " + std::to_string(kLabelsMagic) +
                " (an IDX file of uint8 labels)");
  }
  if (const int64_t nl = labels.u32("label count"); nl != n) {
    labels.fail(std::to_string(nl) + " labels for the " + std::to_string(n) + " images of " +
                images.path());
  }
  at::Tensor bytes = at::empty({n}, at::kByte);
  labels.data(bytes.data_ptr(), n);
  const uint8_t* l = bytes.data_ptr<uint8_t>();
  for (int64_t i = 0; i < n; ++i) {
    if (l[i] > 9)
      labels.fail("label " + std::to_string(l[i]) + " at " + std::to_string(i) + ", expected 0-9");
  }
  out.labels = bytes.to(at::kLong);
  return out;
}

namespace {
constexpr double kMean = 0.2860, kStd = 0.3530;  // of the training images, scaled to [0, 1]
}

at::Tensor normalized_images(const FashionMnistSplit& split) {
  return split.images.reshape({split.images.size(0), kSide * kSide})
      .to(at::kFloat)
      .div_(255.0)
      .sub_(kMean)
      .div_(kStd);
}

FashionMnist::FashionMnist(const std::string& dir, const std::string& split)
    : dir_(dir), split_(split), data_(read_fashion_mnist(dir, split)) {
  // The ops of normalized_images(), once per possible pixel value.
  const at::Tensor table =
      at::arange(256, at::kByte).to(at::kFloat).div_(255.0).sub_(kMean).div_(kStd).contiguous();
  std::copy_n(table.data_ptr<float>(), 256, normalized_.begin());
}

std::optional<mploader::SampleLayout> FashionMnist::sample_layout() const {
  return mploader::SampleLayout{{"image", at::kFloat, {kSide * kSide}}, {"label", at::kLong, {}}};
}

void FashionMnist::write(int64_t index, mploader::SampleWriter& out) {
  if (index < 0 || index >= data_.labels.size(0)) {
    throw std::out_of_range("fashion-mnist: index " + std::to_string(index) + " of " +
                            std::to_string(data_.labels.size(0)));
  }
  const uint8_t* pixels = data_.images.data_ptr<uint8_t>() + index * kSide * kSide;
  float* image = out.data<float>("image");
  for (int64_t p = 0; p < kSide * kSide; ++p) image[p] = normalized_[pixels[p]];
  *out.data<int64_t>("label") = data_.labels.data_ptr<int64_t>()[index];
}

std::optional<mploader::DatasetRecipe> FashionMnist::recipe() const {
  return mploader::DatasetRecipe{"fashion-mnist", split_ + ":" + dir_};
}

MPLOADER_REGISTER_DATASET("fashion-mnist", [](const std::string& config) {
  const size_t colon = config.find(':');
  return std::make_shared<FashionMnist>(config.substr(colon + 1), config.substr(0, colon));
});

}  // namespace examples
