// PNG through libpng (the common kinds go to png_decode_whole() first), converted as PIL's
// convert('RGB') converts: palette expanded (its transparency dropped), grey replicated, alpha dropped (not composited), 16 bits to their high
// byte. Rows below the needed region are not decoded (except in interlaced files, which libpng
// gives only whole).
//
// libpng reports errors by longjmp: the setjmp frames hold no C++ object with a destructor.
#include "vision/decoders.h"

#include <algorithm>
#include <csetjmp>
#include <cstring>

#include <png.h>

namespace mploader::vision::detail {
namespace {

struct PngInput {
  const uint8_t* data;
  size_t size;
  size_t position;
  char message[256];
};

void read_from_memory(png_structp png, png_bytep out, png_size_t count) {
  auto* in = static_cast<PngInput*>(png_get_io_ptr(png));
  if (count > in->size - in->position) {
    png_error(png, "the file ends early (truncated)");
  }
  std::memcpy(out, in->data + in->position, count);
  in->position += count;
}

void keep_message(png_structp png, png_const_charp message) {
  auto* in = static_cast<PngInput*>(png_get_error_ptr(png));
  std::strncpy(in->message, message, sizeof in->message - 1);
  in->message[sizeof in->message - 1] = '\0';
  png_longjmp(png, 1);
}

void ignore_warning(png_structp, png_const_charp) {}

// 8-bit RGB, whatever the file holds.
void request_rgb(png_structp png, png_infop info) {
  const png_byte type = png_get_color_type(png, info);
  if (type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (type == PNG_COLOR_TYPE_GRAY || type == PNG_COLOR_TYPE_GRAY_ALPHA) {
    png_set_expand_gray_1_2_4_to_8(png);
    png_set_gray_to_rgb(png);
  }
  png_set_strip_16(png);
  png_set_strip_alpha(png);
  png_set_packing(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
}

void copy_columns(const uint8_t* row, int x0, int width, uint8_t* dst) {
  std::memcpy(dst, row + static_cast<size_t>(x0) * 3, static_cast<size_t>(width) * 3);
}

// 0: decoded; 1: a libpng error (in->message); 2: the size check refused it (in->message).
int read_png(PngInput* in, const DecodeRequest* request, RgbImage* out,
             std::vector<uint8_t>* full, bool header_only, ImageInfo* info_out) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, in, keep_message,
                                           ignore_warning);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (info == nullptr) {
    std::strcpy(in->message, "libpng could not allocate its state");
    png_destroy_read_struct(&png, nullptr, nullptr);
    return 1;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return 1;
  }
  png_set_read_fn(png, in, read_from_memory);
  png_set_user_limits(png, 0x7fffffff, 0x7fffffff);  // ours is the pixel count, checked below
  png_read_info(png, info);
  const int width = static_cast<int>(png_get_image_width(png, info));
  const int height = static_cast<int>(png_get_image_height(png, info));
  *info_out = ImageInfo{ImageFormat::kPng, width, height};
  const int64_t limit = request ? request->max_pixels : kDefaultMaxPixels;
  if (header_only || int64_t{width} * height > limit || width < 1 || height < 1) {
    png_destroy_read_struct(&png, &info, nullptr);
    return header_only ? 0 : 2;
  }
  request_rgb(png, info);
  int x0, x1, y0, y1;
  covering_range(request->needed.left, request->needed.width, width, width, x0, x1);
  covering_range(request->needed.top, request->needed.height, height, height, y0, y1);
  *out = RgbImage{std::move(out->pixels), x1 - x0, y1 - y0, width, height, width, height, x0, y0};
  out->pixels.resize(static_cast<size_t>(out->width) * static_cast<size_t>(out->height) * 3);
  const size_t stride = static_cast<size_t>(width) * 3;
  if (png_get_interlace_type(png, info) != PNG_INTERLACE_NONE) {
    full->resize(stride * static_cast<size_t>(height));
    for (int pass = png_set_interlace_handling(png); pass > 0; --pass) {
      for (int y = 0; y < height; ++y) png_read_row(png, full->data() + stride * y, nullptr);
    }
    for (int y = y0; y < y1; ++y) {
      copy_columns(full->data() + stride * y, x0, out->width,
                   out->pixels.data() + static_cast<size_t>(y - y0) * out->width * 3);
    }
  } else {
    full->resize(stride);
    for (int y = 0; y < y1; ++y) {
      png_read_row(png, full->data(), nullptr);
      if (y >= y0) {
        copy_columns(full->data(), x0, out->width,
                     out->pixels.data() + static_cast<size_t>(y - y0) * out->width * 3);
      }
    }
  }
  png_destroy_read_struct(&png, &info, nullptr);
  return 0;
}

// Whether the chunks, followed by their lengths from the signature on, reach IEND: a few
// hundred jumps, which make a truncated file bad whatever rows the crop needs.
bool reaches_end_chunk(const uint8_t* data, size_t size) {
  size_t pos = 8;
  while (size - pos >= 8) {
    const size_t length = big_endian32(data + pos);
    if (std::memcmp(data + pos + 4, "IEND", 4) == 0) return true;
    if (length > size - pos - 8) return false;  // chunk data and CRC past the end
    pos += 8 + length;
    if (size - pos < 4) return false;
    pos += 4;  // CRC
  }
  return false;
}

}  // namespace

ImageInfo png_info(const uint8_t* data, size_t size, int64_t max_pixels) {
  PngInput in{data, size, 0, {}};
  ImageInfo info;
  if (read_png(&in, nullptr, nullptr, nullptr, true, &info) != 0) {
    throw DecodeError(std::string("corrupt PNG header: ") + in.message);
  }
  check_image_size(info.width, info.height, max_pixels);
  return info;
}

void png_decode(const uint8_t* data, size_t size, const DecodeRequest& request, RgbImage& out,
                std::vector<uint8_t>& full) {
  // The whole decode walks every chunk to IEND itself; a cut file falls through to here.
  if (png_decode_whole(data, size, request, out, full)) return;
  if (!reaches_end_chunk(data, size)) {
    throw DecodeError("corrupt or truncated PNG: its " + std::to_string(size) +
                      " bytes end before the IEND chunk; the file was cut short (truncated)");
  }
  PngInput in{data, size, 0, {}};
  ImageInfo info;
  const int result = read_png(&in, &request, &out, &full, false, &info);
  if (result == 2) check_image_size(info.width, info.height, request.max_pixels);  // throws
  if (result != 0) throw DecodeError(std::string("corrupt or truncated PNG: ") + in.message);
}

}  // namespace mploader::vision::detail
