// The jpeg workload's per-sample work, as torchvision's ImageNet training transform does it:
// decode (libturbojpeg, RGB), RandomResizedCrop(224) (scale 0.08-1, ratio 3/4-4/3, ten tries,
// then a centre crop), bilinear resize without antialiasing, RandomHorizontalFlip, ToTensor and
// Normalize(ImageNet mean/std) into float32 [3, 224, 224].
//
// The random choices come from a generator seeded per sample (sample_seed), so every loader,
// every worker count and every run crops a sample the same way. JpegDecoder holds a turbojpeg
// handle: one per thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace bench {

inline constexpr int kCropSize = 224;

// A crop rectangle in source pixels, and whether to flip the result.
struct CropBox {
  int top = 0, left = 0, height = 0, width = 0;
  bool flip = false;
};

// torchvision's RandomResizedCrop.get_params for an image of `height` x `width`, plus the flip.
CropBox random_resized_crop(int height, int width, uint64_t seed);

// The seed of sample `index`'s random choices in `epoch` of a run seeded `seed` (splitmix64
// steps over the three, as mploader::worker_seed): it depends on the sample alone, never on the
// process or worker that loads it.
uint64_t sample_seed(uint64_t seed, uint64_t epoch, int64_t index);

// Bilinear resize of `box` of an RGB image (rows of width*3 bytes) to size x size, flipped
// when box.flip, normalised, written as float CHW into out[3 * size * size].
void crop_resize_normalize(const uint8_t* rgb, int width, const CropBox& box, int size,
                           float* out);

class JpegDecoder {
 public:
  JpegDecoder();
  ~JpegDecoder();
  JpegDecoder(const JpegDecoder&) = delete;
  JpegDecoder& operator=(const JpegDecoder&) = delete;

  // Decodes to RGB; false with `error` set when the data is not a decodable JPEG.
  bool decode(const std::vector<uint8_t>& jpeg, std::vector<uint8_t>& rgb, int& width,
              int& height, std::string& error);

 private:
  void* handle_;
};

// Encodes an RGB image (quality 0-100); throws std::runtime_error on failure.
std::vector<uint8_t> encode_jpeg(const std::vector<uint8_t>& rgb, int width, int height,
                                 int quality);

}  // namespace bench
