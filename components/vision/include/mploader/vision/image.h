/// @file
/// Decoded pixels and the errors of decoding: what the decoders (decode.h) hand the transforms
/// (transforms.h). Part of the mploader::vision component (CMake target mploader::vision), which
/// the core library does not depend on.
#pragma once

#include <mploader/errors.h>

#include <cstdint>
#include <string>
#include <vector>

namespace mploader::vision {

/// A file that cannot be decoded as an image, or one refused before decoding (no pixels, more
/// than the pixel limit). what() is the decoder's message; it does not name the file, which the
/// caller (ImageFolder) adds. An mploader::Error, as every error mploader throws.
class DecodeError : public Error {
 public:
  using Error::Error;  ///< what() is the message given.
};

/// A rectangle of an image, in that image's pixel coordinates: pixel (x, y) covers
/// [x, x + 1) x [y, y + 1). Fractional, because transforms map output pixels back into the
/// source image.
struct Rect {
  double left = 0;    ///< x of the left edge
  double top = 0;     ///< y of the top edge
  double width = 0;   ///< extent in x
  double height = 0;  ///< extent in y
};

/// Part of an image, decoded to 8-bit RGB, possibly at a reduced scale (a JPEG's DCT scaling
/// decodes at n/8 of its size). The buffer holds `height` rows of `width` * 3 bytes and shows the
/// rectangle of the whole image, scaled to scaled_width x scaled_height, that starts at
/// (offset_x, offset_y). Source pixel coordinate u maps to buffer coordinate
/// u * scaled_width / source_width - offset_x (and likewise in y).
/// A decoder reuses `pixels`' capacity from one image to the next.
struct RgbImage {
  std::vector<uint8_t> pixels;  ///< height rows of width * 3 bytes, R G B
  int width = 0;                ///< columns in `pixels`
  int height = 0;               ///< rows in `pixels`
  int source_width = 0;         ///< the image's own width (its header's)
  int source_height = 0;        ///< the image's own height
  int scaled_width = 0;         ///< the whole image's width at the decode's scale
  int scaled_height = 0;        ///< the whole image's height at the decode's scale
  int offset_x = 0;             ///< column of the scaled image at the buffer's column 0
  int offset_y = 0;             ///< row of the scaled image at the buffer's row 0
};

/// The largest image the decoders accept by default, in pixels (width x height): 2^28, a
/// 16384 x 16384 picture, 768 MiB as RGB. A header that claims more is refused before anything
/// is allocated (a decompression bomb, or a corrupt header).
inline constexpr int64_t kDefaultMaxPixels = int64_t{1} << 28;

/// Throws DecodeError unless width x height is a usable image size: both at least 1, and the
/// product at most `max_pixels`. The message gives the size and, for a large one, the limit and
/// how to raise it.
void check_image_size(int64_t width, int64_t height, int64_t max_pixels);

}  // namespace mploader::vision
