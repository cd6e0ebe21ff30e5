// The transforms' parameters, the pipeline's checks, and plan(): torchvision's definitions
// applied to a rectangle over the source image instead of to pixels.
#include <mploader/vision/transforms.h>

#include "util/splitmix.h"

#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>

namespace mploader::vision {
namespace {

// The portable generator (util/splitmix.h): a seed gives the same crops on every compiler.
using SampleRng = detail::SplitMix64;

// Python's round(): halves to even, as torchvision's int(round(...)).
int round_even(double x) { return static_cast<int>(std::nearbyint(x)); }

// What the pipeline has made of the image so far: its current size, the source rectangle it
// shows, and whether it is mirrored.
struct VirtualImage {
  int width, height;
  Rect source;
  bool flip = false;

  // Keeps the part (left, top, w, h) of the current image (in its own pixels).
  void crop(int left, int top, int w, int h) {
    const double sx = source.width / width, sy = source.height / height;
    const int from_left = flip ? width - left - w : left;  // a mirrored image's left is our right
    source = {source.left + from_left * sx, source.top + top * sy, w * sx, h * sy};
    width = w;
    height = h;
  }
};

struct Crop {
  int top, left, height, width;
};

// torchvision's RandomResizedCrop.get_params.
Crop random_resized_crop(const RandomResizedCrop& t, int width, int height, SampleRng& rng) {
  const double area = static_cast<double>(width) * height;
  const double log_lo = std::log(t.ratio.first), log_hi = std::log(t.ratio.second);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * rng.uniform(t.scale.first, t.scale.second);
    const double aspect = std::exp(rng.uniform(log_lo, log_hi));
    const int w = round_even(std::sqrt(target * aspect));
    const int h = round_even(std::sqrt(target / aspect));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      const int top = rng.below(height - h + 1);
      return {top, rng.below(width - w + 1), h, w};
    }
  }
  const double in_ratio = static_cast<double>(width) / height;
  int w = width, h = height;
  if (in_ratio < t.ratio.first) {
    h = round_even(w / t.ratio.first);
  } else if (in_ratio > t.ratio.second) {
    w = round_even(h * t.ratio.second);
  }
  return {(height - h) / 2, (width - w) / 2, h, w};
}

// torchvision's _compute_resized_output_size for an int size. Throws TransformError when the
// longer side would not fit an int (a panorama of a pixel's height, say).
Size2 shorter_side_size(const Resize& t, int width, int height) {
  const int shorter = std::min(width, height), longer = std::max(width, height);
  int new_short = *t.shorter_side;
  double new_long = std::floor(static_cast<double>(new_short) * longer / shorter);
  if (t.max_size && new_long > *t.max_size) {
    new_short = static_cast<int>(static_cast<double>(*t.max_size) * new_short / new_long);
    new_long = *t.max_size;
  }
  if (new_long > std::numeric_limits<int>::max()) {
    std::ostringstream sides;
    sides << std::fixed << std::setprecision(0) << new_long;
    throw TransformError("Resize(" + std::to_string(*t.shorter_side) + ") of an image of " +
                         std::to_string(height) + " x " + std::to_string(width) +
                         " (height x width) would make its longer side " + sides.str() +
                         " pixels, more than an int holds: give Resize a max_size, or leave "
                         "such images out");
  }
  const int long_side = static_cast<int>(new_long);
  return width <= height ? Size2{long_side, new_short} : Size2{new_short, long_side};
}

void apply(const Transform& step, VirtualImage& image, SampleRng& rng) {
  if (const auto* t = std::get_if<RandomResizedCrop>(&step)) {
    const Crop c = random_resized_crop(*t, image.width, image.height, rng);
    image.crop(c.left, c.top, c.width, c.height);
    image.width = t->size.width;
    image.height = t->size.height;
  } else if (const auto* t = std::get_if<Resize>(&step)) {
    const Size2 to = t->shorter_side ? shorter_side_size(*t, image.width, image.height) : t->size;
    image.width = std::max(to.width, 1);
    image.height = std::max(to.height, 1);
  } else if (const auto* t = std::get_if<CenterCrop>(&step)) {
    if (t->size.width > image.width || t->size.height > image.height) {
      throw TransformError("CenterCrop(" + std::to_string(t->size.height) + ", " +
                           std::to_string(t->size.width) + ") is larger than the image, which is " +
                           std::to_string(image.height) + " x " + std::to_string(image.width) +
                           " (height x width) after the transforms before it: resize it first "
                           "(Resize to at least the crop's size)");
    }
    image.crop(round_even((image.width - t->size.width) / 2.0),
               round_even((image.height - t->size.height) / 2.0), t->size.width, t->size.height);
  } else if (const auto* t = std::get_if<RandomHorizontalFlip>(&step)) {
    if (rng.uniform() < t->p) image.flip = !image.flip;
  }
}

}  // namespace

RandomResizedCrop::RandomResizedCrop(int size, std::pair<double, double> scale,
                                     std::pair<double, double> ratio)
    : RandomResizedCrop(Size2{size, size}, scale, ratio) {}
RandomResizedCrop::RandomResizedCrop(Size2 size, std::pair<double, double> scale,
                                     std::pair<double, double> ratio)
    : size(size), scale(scale), ratio(ratio) {}
Resize::Resize(int size, std::optional<int> max_size) : shorter_side(size), max_size(max_size) {}
Resize::Resize(Size2 size) : size(size) {}
CenterCrop::CenterCrop(int size) : size{size, size} {}
CenterCrop::CenterCrop(Size2 size) : size(size) {}
RandomHorizontalFlip::RandomHorizontalFlip(double p) : p(p) {}
Normalize::Normalize(std::array<double, 3> mean, std::array<double, 3> std)
    : mean(mean), std(std) {}

ImagePlan Compose::plan(int source_width, int source_height, uint64_t seed) const {
  SampleRng rng(seed);
  VirtualImage image{source_width, source_height,
                     Rect{0, 0, static_cast<double>(source_width),
                          static_cast<double>(source_height)}};
  for (const Transform& step : transforms_) apply(step, image, rng);
  return ImagePlan{image.source, image.flip, image.height, image.width};
}

std::vector<int64_t> Compose::output_shape() const {
  if (layout_ == PixelLayout::kFloat32CHW) return {3, out_.height, out_.width};
  return {out_.height, out_.width, 3};
}

size_t Compose::output_bytes() const {
  const size_t element = layout_ == PixelLayout::kFloat32CHW ? sizeof(float) : 1;
  return static_cast<size_t>(out_.height) * static_cast<size_t>(out_.width) * 3 * element;
}

}  // namespace mploader::vision
