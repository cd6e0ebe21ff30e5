// The format decoders behind ImageDecoder. Each reads the header first and refuses an image
// check_image_size() refuses before allocating its pixels; each throws DecodeError.
#pragma once

#include <mploader/vision/decode.h>

#include <optional>
#include <vector>

namespace mploader::vision::detail {

// What a decode is asked for: a rectangle of the source, the least scale, the pixel limit.
struct DecodeRequest {
  Rect needed;
  double min_scale;
  int64_t max_pixels;
};

ImageInfo jpeg_info(const uint8_t* data, size_t size, int64_t max_pixels);
// `row` is scratch for one CMYK row, kept by the caller between images.
void jpeg_decode(const uint8_t* data, size_t size, const DecodeRequest& request, RgbImage& out,
                 std::vector<uint8_t>& row);

ImageInfo png_info(const uint8_t* data, size_t size, int64_t max_pixels);
// `full` is scratch for an interlaced image, which libpng gives only whole, or for the rows
// png_decode_whole() inflates at once.
void png_decode(const uint8_t* data, size_t size, const DecodeRequest& request, RgbImage& out,
                std::vector<uint8_t>& full);
// The common PNG (8-bit grey, grey + alpha, RGB or RGBA, not interlaced) with libdeflate;
// false, having decoded nothing, for any other (libpng's then). Throws DecodeError on a
// damaged file.
bool png_decode_whole(const uint8_t* data, size_t size, const DecodeRequest& request,
                      RgbImage& out, std::vector<uint8_t>& rows);

// The 4 bytes at `p` as a big-endian number: PNG's chunk lengths, sizes and CRCs.
inline uint32_t big_endian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// The format whose signature `data` starts with, if any.
std::optional<ImageFormat> image_signature(const uint8_t* data, size_t size);

// The columns or rows [first, end) of an axis of `scaled` pixels (`source` at full size) that
// cover [from, from + extent) in source coordinates.
void covering_range(double from, double extent, int source, int scaled, int& first, int& end);

}  // namespace mploader::vision::detail
