// Decoding with TurboJPEG 2.1's API, and the crop/resize/normalise in plain loops (one pass
// over the output, reading only the source pixels the crop needs).
#include "jpeg_transform.h"

#include <turbojpeg.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

namespace bench {

namespace {

constexpr float kMean[3] = {0.485f, 0.456f, 0.406f};
constexpr float kStd[3] = {0.229f, 0.224f, 0.225f};

// For output coordinate o in [0, size): the two source coordinates and the second's weight,
// with align_corners=False as torchvision's bilinear resize.
struct Tap {
  int lo, hi;
  float w;
};

std::vector<Tap> taps(int start, int extent, int size) {
  std::vector<Tap> t(static_cast<size_t>(size));
  const float scale = static_cast<float>(extent) / static_cast<float>(size);
  for (int o = 0; o < size; ++o) {
    const float src = std::max((static_cast<float>(o) + 0.5f) * scale - 0.5f, 0.0f);
    const int lo = std::min(static_cast<int>(src), extent - 1);
    t[static_cast<size_t>(o)] = {start + lo, start + std::min(lo + 1, extent - 1),
                                 src - static_cast<float>(lo)};
  }
  return t;
}

}  // namespace

uint64_t sample_seed(uint64_t seed, uint64_t epoch, int64_t index) {
  // Nearby inputs (index i and i + 1) give unrelated seeds.
  auto mix = [](uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  return mix(mix(mix(seed) ^ epoch) ^ static_cast<uint64_t>(index));
}

CropBox random_resized_crop(int height, int width, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> scale(0.08, 1.0);
  std::uniform_real_distribution<double> log_ratio(std::log(3.0 / 4.0), std::log(4.0 / 3.0));
  const double area = static_cast<double>(height) * width;
  CropBox box;
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * scale(rng);
    const double aspect = std::exp(log_ratio(rng));
    const int w = static_cast<int>(std::lround(std::sqrt(target * aspect)));
    const int h = static_cast<int>(std::lround(std::sqrt(target / aspect)));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      box = {std::uniform_int_distribution<int>(0, height - h)(rng),
             std::uniform_int_distribution<int>(0, width - w)(rng), h, w};
      box.flip = (rng() & 1) != 0;
      return box;
    }
  }
  // Centre crop of the largest box within the ratio range.
  const double in_ratio = static_cast<double>(width) / height;
  int w = width, h = height;
  if (in_ratio < 3.0 / 4.0) {
    h = static_cast<int>(std::lround(w / (3.0 / 4.0)));
  } else if (in_ratio > 4.0 / 3.0) {
    w = static_cast<int>(std::lround(h * (4.0 / 3.0)));
  }
  h = std::min(h, height);
  w = std::min(w, width);
  box = {(height - h) / 2, (width - w) / 2, h, w};
  box.flip = (rng() & 1) != 0;
  return box;
}

namespace {

// One source row interpolated horizontally at every output column, per channel (planar).
void lerp_row(const uint8_t* row, const std::vector<Tap>& xs, float* planes, size_t size) {
  for (size_t ox = 0; ox < size; ++ox) {
    const size_t a = static_cast<size_t>(xs[ox].lo) * 3, b = static_cast<size_t>(xs[ox].hi) * 3;
    for (size_t c = 0; c < 3; ++c) {
      planes[c * size + ox] = row[a + c] + xs[ox].w * (row[b + c] - row[a + c]);
    }
  }
}

}  // namespace

// Separable: each needed source row is interpolated horizontally once (rows are shared by
// neighbouring output rows), then the vertical blend and normalisation run over contiguous
// floats, which the compiler vectorises. A flip just reverses the column taps.
void crop_resize_normalize(const uint8_t* rgb, int width, const CropBox& box, int size,
                           float* out) {
  std::vector<Tap> xs = taps(box.left, box.width, size);
  if (box.flip) std::reverse(xs.begin(), xs.end());
  const std::vector<Tap> ys = taps(box.top, box.height, size);
  const size_t n = static_cast<size_t>(size), plane = n * n;
  const size_t stride = static_cast<size_t>(width) * 3;
  float scale[3], shift[3];
  for (int c = 0; c < 3; ++c) {
    scale[c] = 1.0f / (255.0f * kStd[c]);
    shift[c] = -kMean[c] / kStd[c];
  }
  std::vector<float> rows[2] = {std::vector<float>(3 * n), std::vector<float>(3 * n)};
  int row_of[2] = {-1, -1};  // the source row each buffer holds
  for (size_t oy = 0; oy < n; ++oy) {
    const Tap& y = ys[oy];
    const float* lerped[2];
    for (int k = 0; k < 2; ++k) {
      const int want = k == 0 ? y.lo : y.hi;
      int slot = row_of[0] == want ? 0 : row_of[1] == want ? 1 : -1;
      if (slot < 0) {
        slot = (row_of[0] == y.lo || row_of[0] == y.hi) ? 1 : 0;
        lerp_row(rgb + static_cast<size_t>(want) * stride, xs, rows[slot].data(), n);
        row_of[slot] = want;
      }
      lerped[k] = rows[slot].data();
    }
    for (size_t c = 0; c < 3; ++c) {
      const float* top = lerped[0] + c * n;
      const float* bottom = lerped[1] + c * n;
      float* dst = out + c * plane + oy * n;
      for (size_t ox = 0; ox < n; ++ox) {
        dst[ox] = (top[ox] + y.w * (bottom[ox] - top[ox])) * scale[c] + shift[c];
      }
    }
  }
}

JpegDecoder::JpegDecoder() : handle_(tjInitDecompress()) {
  if (handle_ == nullptr) {
    throw std::runtime_error(std::string("tjInitDecompress: ") + tjGetErrorStr());
  }
}

JpegDecoder::~JpegDecoder() { tjDestroy(handle_); }

bool JpegDecoder::decode(const std::vector<uint8_t>& jpeg, std::vector<uint8_t>& rgb, int& width,
                         int& height, std::string& error) {
  int subsampling = 0, colorspace = 0;
  if (jpeg.empty() ||
      tjDecompressHeader3(handle_, jpeg.data(), static_cast<unsigned long>(jpeg.size()), &width,
                          &height, &subsampling, &colorspace) != 0) {
    error = jpeg.empty() ? "empty file" : tjGetErrorStr2(handle_);
    return false;
  }
  rgb.resize(static_cast<size_t>(width) * height * 3);
  // A truncated file fails with a warning (its missing rows would be grey): corrupt too.
  if (tjDecompress2(handle_, jpeg.data(), static_cast<unsigned long>(jpeg.size()), rgb.data(),
                    width, 0, height, TJPF_RGB, 0) != 0) {
    error = tjGetErrorStr2(handle_);
    return false;
  }
  return true;
}

std::vector<uint8_t> encode_jpeg(const std::vector<uint8_t>& rgb, int width, int height,
                                 int quality) {
  tjhandle handle = tjInitCompress();
  if (handle == nullptr) {
    throw std::runtime_error(std::string("tjInitCompress: ") + tjGetErrorStr());
  }
  unsigned char* data = nullptr;
  unsigned long size = 0;
  const int rc = tjCompress2(handle, rgb.data(), width, 0, height, TJPF_RGB, &data, &size,
                             TJSAMP_420, quality, 0);
  std::vector<uint8_t> out;
  if (rc == 0) out.assign(data, data + size);
  const std::string error = rc == 0 ? "" : tjGetErrorStr2(handle);
  tjFree(data);
  tjDestroy(handle);
  if (rc != 0) throw std::runtime_error("tjCompress2: " + error);
  return out;
}

}  // namespace bench
