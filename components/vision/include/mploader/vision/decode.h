/// @file
/// ImageDecoder: JPEG (libjpeg-turbo) and PNG (libpng) files to 8-bit RGB, as PIL's
/// convert('RGB') gives them (grey replicated, palette expanded, alpha dropped, 16-bit reduced),
/// reading only what a crop needs: a JPEG is decoded at the smallest DCT scale (n/8) that keeps
/// the crop sharp, and only its rows and (whole iMCU) columns.
#pragma once

#include <mploader/vision/image.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mploader::vision {

/// The kinds of file ImageDecoder reads.
enum class ImageFormat {
  kJpeg,  ///< JPEG (baseline or progressive; grey, YCbCr, CMYK or YCCK)
  kPng,   ///< PNG (any bit depth, colour type and interlace)
};

/// What a file's header says.
struct ImageInfo {
  ImageFormat format = ImageFormat::kJpeg;  ///< From the first bytes.
  int width = 0;                            ///< Pixels per row.
  int height = 0;                           ///< Rows.
};

/// Decodes images; keeps its buffers from one image to the next. Not thread-safe: one per
/// thread. Every failure is a DecodeError whose message is the decoder's.
class ImageDecoder {
 public:
  /// Images with more than `max_pixels` pixels are refused from their header.
  explicit ImageDecoder(int64_t max_pixels = kDefaultMaxPixels);
  ~ImageDecoder();
  ImageDecoder(const ImageDecoder&) = delete;
  ImageDecoder& operator=(const ImageDecoder&) = delete;

  /// The format and size from the header alone. Throws DecodeError for empty data, a file that
  /// is neither JPEG nor PNG, a corrupt header, and a size check_image_size() refuses.
  ImageInfo info(const uint8_t* data, size_t size);
  /// Decodes at least `needed` (source pixel coordinates; clipped to the image) into `out`, at
  /// the smallest scale s >= min_scale the format offers (JPEG: n/8; PNG: 1). A truncated or
  /// corrupt file is a DecodeError, never a grey image.
  void decode(const uint8_t* data, size_t size, const Rect& needed, double min_scale,
              RgbImage& out);
  /// The whole image at full size.
  void decode(const uint8_t* data, size_t size, RgbImage& out);

 private:
  int64_t max_pixels_;
  std::vector<uint8_t> scratch_;  // a CMYK row, or a whole interlaced PNG

};

}  // namespace mploader::vision
