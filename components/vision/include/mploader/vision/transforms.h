/// @file
/// Image transforms with torchvision's names, parameters and definitions, composed into one
/// pipeline that resamples each image once, straight into the batch.
///
/// Compose({RandomResizedCrop(224), RandomHorizontalFlip(), ToTensor(),
///          Normalize({0.485, 0.456, 0.406}, {0.229, 0.224, 0.225})})
/// is torchvision's ImageNet training recipe. The geometric transforms (crops, resizes, flips)
/// only move a rectangle over the source image; render() then resamples that rectangle to the
/// output size in one antialiased bilinear pass, where torchvision resamples after each resize.
#pragma once

#include <mploader/vision/image.h>

#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace mploader::vision {

/// A height and a width, in pixels (torchvision's (h, w) order).
struct Size2 {
  int height = 0;  ///< rows
  int width = 0;   ///< columns
};

/// torchvision.transforms.RandomResizedCrop: a random crop of `scale` times the area and an
/// aspect ratio (width / height) in `ratio` (log-uniform), ten tries, then a centre crop
/// clamped to the ratio range; resized to `size`.
struct RandomResizedCrop {
  /// A square output of size x size.
  explicit RandomResizedCrop(int size, std::pair<double, double> scale = {0.08, 1.0},
                             std::pair<double, double> ratio = {3.0 / 4.0, 4.0 / 3.0});
  /// An output of size.height x size.width.
  explicit RandomResizedCrop(Size2 size, std::pair<double, double> scale = {0.08, 1.0},
                             std::pair<double, double> ratio = {3.0 / 4.0, 4.0 / 3.0});
  Size2 size;                         ///< The output size.
  std::pair<double, double> scale;    ///< Bounds of the crop's share of the area.
  std::pair<double, double> ratio;    ///< Bounds of the crop's width / height.
};

/// torchvision.transforms.Resize: an int resizes the shorter side to it (the longer one keeps
/// the aspect ratio, then is capped at max_size if given); a Size2 resizes to exactly that.
/// Always antialiased, as torchvision's default.
struct Resize {
  /// The shorter side becomes `size`; the longer one at most `max_size`.
  explicit Resize(int size, std::optional<int> max_size = std::nullopt);
  /// Exactly size.height x size.width.
  explicit Resize(Size2 size);
  std::optional<int> shorter_side;  ///< Set for Resize(int).
  std::optional<int> max_size;      ///< Resize(int)'s cap on the longer side.
  Size2 size;                       ///< Set for Resize(Size2).
};

/// torchvision.transforms.CenterCrop: the centre size.height x size.width, offsets rounded as
/// torchvision rounds them. A crop larger than the image is a TransformError (torchvision pads).
struct CenterCrop {
  /// A square crop.
  explicit CenterCrop(int size);
  /// A size.height x size.width crop.
  explicit CenterCrop(Size2 size);
  Size2 size;  ///< The crop's size.
};

/// torchvision.transforms.RandomHorizontalFlip: mirrors the image with probability p.
struct RandomHorizontalFlip {
  /// Flips with probability `p`, in [0, 1].
  explicit RandomHorizontalFlip(double p = 0.5);
  double p;  ///< The probability of a flip.
};

/// torchvision.transforms.ToTensor: float32 [3, H, W] in [0, 1]. Without it the output is
/// uint8 [H, W, 3].
struct ToTensor {};

/// torchvision.transforms.Normalize: (x - mean) / std per channel, after ToTensor.
struct Normalize {
  /// Per channel (R, G, B) means and standard deviations; every mean must be finite and every
  /// std > 0.
  Normalize(std::array<double, 3> mean, std::array<double, 3> std);
  std::array<double, 3> mean;  ///< Subtracted from each channel.
  std::array<double, 3> std;   ///< Each channel is divided by it.
};

/// One step of a Compose.
using Transform =
    std::variant<RandomResizedCrop, Resize, CenterCrop, RandomHorizontalFlip, ToTensor, Normalize>;

/// The element type and order of a pipeline's output.
enum class PixelLayout {
  kUint8HWC,    ///< uint8 [H, W, 3]: no ToTensor.
  kFloat32CHW,  ///< float32 [3, H, W]: after ToTensor (and Normalize).
};

/// An image's own failure under a transform, such as a CenterCrop larger than the image;
/// what() gives both sizes. The caller adds the file's name. An mploader::Error, as every error
/// mploader throws.
class TransformError : public Error {
 public:
  using Error::Error;  ///< what() is the message given.
};

/// What Compose::plan() chose for one image: which source rectangle becomes the output.
struct ImagePlan {
  Rect source;        ///< In source pixel coordinates.
  bool flip = false;  ///< Mirror the output horizontally.
  int out_height = 0; ///< Output rows.
  int out_width = 0;  ///< Output columns.
};

/// Buffers render() reuses from one image to the next, so that it allocates nothing once warm;
/// one per thread.
struct RenderScratch {
  /// The filter taps of one axis: output coordinate o reads `counts[o]` pixels from
  /// `starts[o]`, weighted by weights[o * stride ...].
  struct Taps {
    std::vector<int> starts;     ///< First pixel read, per output coordinate.
    std::vector<int> counts;     ///< Pixels read, per output coordinate.
    std::vector<float> weights;  ///< Their weights, `stride` per output coordinate.
    int stride = 0;              ///< Weights per output coordinate.
  };
  Taps x;                   ///< Columns.
  Taps y;                   ///< Rows.
  std::vector<float> pixels;  ///< One source row as floats, 4 per pixel (RGB and a zero).
  std::vector<float> rows;  ///< The horizontal pass's output.
  std::vector<float> line;  ///< One output row before it is stored.
};

/// A pipeline of transforms (torchvision.transforms.Compose). Its output size is fixed: a batch
/// needs one shape.
class Compose {
 public:
  /// Checks the pipeline: parameters in range, a fixed output size (it ends with a crop or a
  /// Resize(Size2) after any Resize(int)), ToTensor after the geometric transforms, Normalize
  /// after ToTensor. Throws OptionError("transforms", ...) naming the transform, its position
  /// and the fix.
  explicit Compose(std::vector<Transform> transforms);

  /// The transforms, in order.
  const std::vector<Transform>& transforms() const { return transforms_; }
  /// uint8 HWC, or float32 CHW after ToTensor.
  PixelLayout layout() const { return layout_; }
  /// {H, W, 3} or {3, H, W}.
  std::vector<int64_t> output_shape() const;
  /// Bytes of one output image.
  size_t output_bytes() const;

  /// The random choices for an image of source_width x source_height, drawn in transform order
  /// from a generator seeded with `seed` (portable: the same on every compiler). Throws
  /// TransformError for an image a transform cannot take.
  ImagePlan plan(int source_width, int source_height, uint64_t seed) const;
  /// The source rectangle render() reads for `plan`: the plan's, widened by the filter's reach
  /// and clipped to the image. Decoding only this much is enough.
  Rect needed_region(const ImagePlan& plan, int source_width, int source_height) const;
  /// The least decode scale (decoded pixels per source pixel, at most 1) that keeps at least
  /// one decoded pixel per output pixel in both directions.
  double min_scale(const ImagePlan& plan) const;
  /// Resamples plan.source of `image` into `out` (output_bytes() bytes, layout()).
  void render(const RgbImage& image, const ImagePlan& plan, void* out,
              RenderScratch& scratch) const;
  /// Like torchvision's repr: "Compose(RandomResizedCrop(size=(224, 224), ...), ...)".
  std::string describe() const;

 private:
  std::vector<Transform> transforms_;
  PixelLayout layout_ = PixelLayout::kUint8HWC;
  Size2 out_;
  std::array<float, 3> scale_{};   // per channel: 1 / 255 / std (1 for uint8)
  std::array<float, 3> offset_{};  // per channel: -mean / std (0 for uint8)
};

}  // namespace mploader::vision
