// ImageDecoder: the format from the first bytes, then the format's decoder.
#include <mploader/vision/decode.h>

#include "vision/decoders.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>

namespace mploader::vision {
namespace {

constexpr uint8_t kPngMagic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

ImageFormat format_of(const uint8_t* data, size_t size) {
  if (size == 0) throw DecodeError("the file is empty (0 bytes)");
  if (const std::optional<ImageFormat> format = detail::image_signature(data, size)) return *format;
  std::string start;
  for (size_t i = 0; i < std::min<size_t>(size, 8); ++i) {
    char hex[4];
    std::snprintf(hex, sizeof hex, "%02x ", data[i]);
    start += hex;
  }
  start.pop_back();
  throw DecodeError("not a JPEG or PNG: the file starts with bytes " + start + " (" +
                    std::to_string(size) + " bytes in all)");
}

}  // namespace

namespace detail {
std::optional<ImageFormat> image_signature(const uint8_t* data, size_t size) {
  if (size >= 3 && data[0] == 0xff && data[1] == 0xd8 && data[2] == 0xff) return ImageFormat::kJpeg;
  if (size >= 8 && std::memcmp(data, kPngMagic, 8) == 0) return ImageFormat::kPng;
  return std::nullopt;
}

void covering_range(double from, double extent, int source, int scaled, int& first, int& end) {
  const double ratio = static_cast<double>(scaled) / source;
  first = std::clamp(static_cast<int>(std::floor(from * ratio)), 0, scaled - 1);
  end = std::clamp(static_cast<int>(std::ceil((from + extent) * ratio)), first + 1, scaled);
}
}  // namespace detail

ImageDecoder::ImageDecoder(int64_t max_pixels) : max_pixels_(max_pixels) {}
ImageDecoder::~ImageDecoder() = default;

ImageInfo ImageDecoder::info(const uint8_t* data, size_t size) {
  return format_of(data, size) == ImageFormat::kJpeg ? detail::jpeg_info(data, size, max_pixels_)
                                                     : detail::png_info(data, size, max_pixels_);
}

void ImageDecoder::decode(const uint8_t* data, size_t size, const Rect& needed, double min_scale,
                          RgbImage& out) {
  const detail::DecodeRequest request{needed, min_scale, max_pixels_};
  if (format_of(data, size) == ImageFormat::kJpeg) {
    detail::jpeg_decode(data, size, request, out, scratch_);
  } else {
    detail::png_decode(data, size, request, out, scratch_);
  }
}

void ImageDecoder::decode(const uint8_t* data, size_t size, RgbImage& out) {
  const ImageInfo whole = info(data, size);
  decode(data, size, Rect{0, 0, static_cast<double>(whole.width), static_cast<double>(whole.height)},
         1.0, out);
}

}  // namespace mploader::vision
