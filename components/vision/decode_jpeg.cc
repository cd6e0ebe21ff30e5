// JPEG through libjpeg-turbo's libjpeg API, which (unlike TurboJPEG 2.1's) can skip rows and
// crop columns: with DCT scaling, a 224-pixel crop of a 4000-pixel photo decodes a few hundred
// thousand pixels, not twelve million.
//
// libjpeg reports errors by longjmp (jpeg_trap.h); what must outlive the jump (the message, the
// output buffer) lives in the caller's frame.
#include "vision/decoders.h"
#include "vision/jpeg_trap.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include <jerror.h>

namespace mploader::vision::detail {
namespace {

// A file that ends early is an error (PIL: "image file is truncated"), not a grey lower half.
// Other warnings (extraneous bytes before a marker, say) decode as PIL decodes them.
void jump_on_truncation(j_common_ptr cinfo, int level) {
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) jump_on_jpeg_error(cinfo);
}

void install_trap(jpeg_decompress_struct& cinfo, JpegTrap& trap) {
  install_jpeg_trap(cinfo, trap);
  trap.manager.emit_message = jump_on_truncation;
}

// Runs `use` on a decompressor over `data` whose header is read, then destroys it. Returns false
// with trap.message set when libjpeg fails, in the header or anywhere in `use`: the setjmp is in
// this frame, which stays live while `use` runs, so libjpeg's longjmp lands here. `use` may
// throw (the decompressor is destroyed first), but must hold no object with a destructor across
// a libjpeg call: the longjmp would skip it.
template <typename Use>
bool with_jpeg(const uint8_t* data, size_t size, JpegTrap& trap, Use&& use) {
  jpeg_decompress_struct cinfo;
  install_trap(cinfo, trap);
  if (setjmp(trap.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  try {
    use(cinfo);
  } catch (...) {
    jpeg_destroy_decompress(&cinfo);
    throw;
  }
  jpeg_destroy_decompress(&cinfo);
  return true;
}

// Pillow's cmyk2rgb: each channel times (255 - K), with Pillow's rounding. Adobe's files store
// the channels inverted.
void cmyk_to_rgb(const uint8_t* cmyk, int width, bool inverted, uint8_t* rgb) {
  auto muldiv255 = [](int a, int b) {
    const int t = a * b + 128;
    return ((t >> 8) + t) >> 8;
  };
  for (int x = 0; x < width; ++x, cmyk += 4, rgb += 3) {
    const int k = inverted ? cmyk[3] : 255 - cmyk[3];  // 255 - K
    for (int c = 0; c < 3; ++c) {
      const int ink = inverted ? 255 - cmyk[c] : cmyk[c];
      rgb[c] = static_cast<uint8_t>(k - muldiv255(ink, k));
    }
  }
}

// The least of 1/8, 2/8, 4/8 and 8/8 that is at least min_scale: libjpeg-turbo's inverse DCTs
// for these are SIMD; the others (3/8, 5/8, 7/8, ...) are plain C and slower than decoding at
// the next power of two.
int scale_eighths(double min_scale) {
  for (int n : {1, 2, 4}) {
    if (n / 8.0 >= min_scale) return n;
  }
  return 8;
}

// Whether the data reaches its end-of-image marker (EOI). Marker segments are skipped by their
// lengths and entropy-coded data is scanned for the next marker (0xFF followed by neither a
// stuffed 0x00, a restart marker nor fill), as libjpeg reads it; bytes after the EOI (a camera's
// trailer) are allowed. A memchr-speed pass: cheap next to decoding, and it makes a truncated
// file bad whatever rows the crop needs.
bool reaches_end_marker(const uint8_t* data, size_t size) {
  size_t pos = 2;  // after SOI
  while (pos + 1 < size) {
    const auto* next = static_cast<const uint8_t*>(std::memchr(data + pos, 0xff, size - pos));
    if (next == nullptr || next + 1 >= data + size) return false;
    pos = static_cast<size_t>(next - data);
    const uint8_t marker = data[pos + 1];
    if (marker == 0xd9) return true;
    const bool restart = marker >= 0xd0 && marker <= 0xd7;
    if (marker == 0xff || marker == 0x00 || marker == 0x01 || restart) {
      pos += marker == 0xff ? 1 : 2;  // fill, stuffing, TEM or RSTn: no length follows
      continue;
    }
    if (pos + 4 > size) return false;
    pos += 2 + ((size_t{data[pos + 2]} << 8) | data[pos + 3]);  // a segment, by its length
  }
  return false;
}

// Reads the rows and columns of `request` (scaled, widened to iMCUs) into out; under
// with_jpeg(), which a libjpeg error returns to. Throws DecodeError for a size check_image_size
// refuses. Holds nothing with a destructor (see with_jpeg).
void decode_region(jpeg_decompress_struct& cinfo, const DecodeRequest& request, RgbImage& out,
                   std::vector<uint8_t>& row) {
  const int64_t width = cinfo.image_width, height = cinfo.image_height;
  if (width < 1 || height < 1 || width * height > request.max_pixels) {
    check_image_size(width, height, request.max_pixels);  // throws, before any pixel exists
  }
  const bool cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
  cinfo.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  cinfo.scale_num = static_cast<unsigned>(scale_eighths(request.min_scale));
  cinfo.scale_denom = 8;
  jpeg_start_decompress(&cinfo);
  out.source_width = static_cast<int>(cinfo.image_width);
  out.source_height = static_cast<int>(cinfo.image_height);
  out.scaled_width = static_cast<int>(cinfo.output_width);
  out.scaled_height = static_cast<int>(cinfo.output_height);
  int x0, x1, y0, y1;
  covering_range(request.needed.left, request.needed.width, out.source_width, out.scaled_width,
                 x0, x1);
  covering_range(request.needed.top, request.needed.height, out.source_height,
                 out.scaled_height, y0, y1);
  // Fancy upsampling cannot see past a cropped edge, so the edge columns of a crop differ from
  // the whole image's (by up to 13 levels, measured): one column more on each side keeps them
  // out of the region asked for.
  x0 = std::max(x0 - 1, 0);
  x1 = std::min(x1 + 1, out.scaled_width);
  JDIMENSION crop_x = static_cast<JDIMENSION>(x0), crop_width = static_cast<JDIMENSION>(x1 - x0);
  if (crop_width < cinfo.output_width) jpeg_crop_scanline(&cinfo, &crop_x, &crop_width);
  out.offset_x = static_cast<int>(crop_x);  // widened to an iMCU boundary
  out.offset_y = y0;
  out.width = static_cast<int>(crop_width);
  out.height = y1 - y0;
  out.pixels.resize(static_cast<size_t>(out.width) * static_cast<size_t>(out.height) * 3);
  if (cmyk) row.resize(static_cast<size_t>(out.width) * 4);
  if (y0 > 0) jpeg_skip_scanlines(&cinfo, static_cast<JDIMENSION>(y0));
  for (int y = 0; y < out.height; ++y) {
    uint8_t* dst = out.pixels.data() + static_cast<size_t>(y) * static_cast<size_t>(out.width) * 3;
    JSAMPROW line = cmyk ? row.data() : dst;
    jpeg_read_scanlines(&cinfo, &line, 1);
    if (cmyk) cmyk_to_rgb(row.data(), out.width, cinfo.saw_Adobe_marker, dst);
  }
  // The rows below the region are never decoded.
  if (cinfo.output_scanline < cinfo.output_height) {
    jpeg_abort_decompress(&cinfo);
  } else {
    jpeg_finish_decompress(&cinfo);
  }
}

bool read_region(const uint8_t* data, size_t size, const DecodeRequest& request, RgbImage& out,
                 std::vector<uint8_t>& row, JpegTrap& trap) {
  return with_jpeg(data, size, trap, [&](jpeg_decompress_struct& cinfo) {
    decode_region(cinfo, request, out, row);
  });
}

bool read_header(const uint8_t* data, size_t size, ImageInfo& info, JpegTrap& trap) {
  return with_jpeg(data, size, trap, [&](jpeg_decompress_struct& cinfo) {
    info = ImageInfo{ImageFormat::kJpeg, static_cast<int>(cinfo.image_width),
                     static_cast<int>(cinfo.image_height)};
  });
}

}  // namespace

ImageInfo jpeg_info(const uint8_t* data, size_t size, int64_t max_pixels) {
  JpegTrap trap;
  ImageInfo info;
  if (!read_header(data, size, info, trap)) {
    throw DecodeError(std::string("corrupt JPEG header: ") + trap.message);
  }
  check_image_size(info.width, info.height, max_pixels);
  return info;
}

void jpeg_decode(const uint8_t* data, size_t size, const DecodeRequest& request, RgbImage& out,
                 std::vector<uint8_t>& row) {
  if (!reaches_end_marker(data, size)) {
    throw DecodeError("corrupt or truncated JPEG: Premature end of JPEG file: its " +
                      std::to_string(size) +
                      " bytes end without the end-of-image marker (EOI); the file was cut short");
  }
  JpegTrap trap;
  if (!read_region(data, size, request, out, row, trap)) {
    throw DecodeError(std::string("corrupt or truncated JPEG: ") + trap.message);
  }
}

}  // namespace mploader::vision::detail
