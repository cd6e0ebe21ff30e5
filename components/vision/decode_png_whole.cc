// The common PNG, decoded whole with libdeflate: 8-bit, not interlaced, grey, grey + alpha, RGB or
// RGBA, with no critical chunk but IHDR, IDAT and IEND. That is what cameras, PIL and most tools
// write for photos. On a 2.7 MP photo PNG libpng took 54 ms, most of it unfiltering Paeth rows a
// byte at a time; this decode takes 23 ms (docs/benchmarks.md).
//
// libdeflate inflates only a whole stream into a whole buffer, so the filtered rows are held
// at once ((width * channels + 1) x height bytes); images whose rows exceed kMaxWholeBytes go to
// libpng, which streams. Every chunk's CRC and the stream's Adler-32 are checked, as libpng does.
#include "vision/decoders.h"
#include "vision/image_file.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include <libdeflate.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace mploader::vision::detail {
namespace {

constexpr size_t kMaxWholeBytes = size_t{128} << 20;

struct WholePng {
  int width = 0, height = 0, channels = 0;
  std::vector<std::pair<size_t, size_t>> image_data;  // each IDAT chunk's data: offset, bytes
  size_t compressed_bytes = 0;
};

int channels_of(uint8_t color_type) {
  switch (color_type) {
    case 0: return 1;  // grey
    case 2: return 3;  // RGB
    case 4: return 2;  // grey + alpha
    case 6: return 4;  // RGBA
    default: return 0;  // palette: libpng
  }
}

// The chunks, or false when the file is outside what this decoder takes (libpng then decodes
// it, and reports what is wrong with it). Throws on a CRC mismatch, which libpng would too.
bool read_chunks(const uint8_t* data, size_t size, WholePng& png) {
  bool header = false;
  for (size_t pos = 8; size - pos >= 12;) {
    const size_t length = big_endian32(data + pos);
    const uint8_t* type = data + pos + 4;
    if (length > size - pos - 12) return false;
    const uint32_t stored_crc = big_endian32(data + pos + 8 + length);
    if (libdeflate_crc32(0, type, length + 4) != stored_crc) {
      throw DecodeError("corrupt PNG: the CRC of its " + std::string(reinterpret_cast<const char*>(type), 4) +
                        " chunk at byte " + std::to_string(pos) +
                        " does not match its data; the file is damaged, replace it");
    }
    const uint8_t* body = data + pos + 8;
    if (std::memcmp(type, "IHDR", 4) == 0) {
      if (length != 13 || body[8] != 8 || body[10] != 0 || body[11] != 0 || body[12] != 0) {
        return false;  // not 8-bit, or an unknown compression, filter or interlace method
      }
      png.width = static_cast<int>(std::min<uint32_t>(big_endian32(body), 0x7fffffff));
      png.height = static_cast<int>(std::min<uint32_t>(big_endian32(body + 4), 0x7fffffff));
      png.channels = channels_of(body[9]);
      header = png.channels > 0;
      if (!header) return false;
    } else if (std::memcmp(type, "IDAT", 4) == 0) {
      png.image_data.emplace_back(pos + 8, length);
      png.compressed_bytes += length;
    } else if (std::memcmp(type, "IEND", 4) == 0) {
      return header && png.compressed_bytes > 0;
    } else if ((type[0] & 0x20) == 0) {
      return false;  // a critical chunk (PLTE, or one this decoder does not know)
    }
    pos += 12 + length;
  }
  return false;
}

int paeth_predictor(int a, int b, int c) {
  const int pa = std::abs(b - c), pb = std::abs(a - c), pc = std::abs(a + b - 2 * c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

void unfilter_paeth_scalar(uint8_t* row, const uint8_t* up, size_t length, int bpp) {
  for (int i = 0; i < bpp; ++i) row[i] = static_cast<uint8_t>(row[i] + up[i]);
  for (size_t i = bpp; i < length; ++i) {
    row[i] = static_cast<uint8_t>(row[i] + paeth_predictor(row[i - bpp], up[i], up[i - bpp]));
  }
}

#if defined(__SSE2__)
// One pixel per step in 16-bit lanes: the left neighbour is the previous step's result, so the
// pixels cannot go side by side, but the channels can. kBpp is 3 or 4 (a constant, so that the
// copies below are single moves); the row is padded so that reading 4 bytes at the last pixel
// stays inside the buffer.
template <int kBpp>
void unfilter_paeth_sse2(uint8_t* row, const uint8_t* up, size_t length) {
  const __m128i zero = _mm_setzero_si128();
  auto load = [&](const uint8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm_unpacklo_epi8(_mm_cvtsi32_si128(v), zero);
  };
  auto absolute = [](__m128i v) { return _mm_max_epi16(v, _mm_sub_epi16(_mm_setzero_si128(), v)); };
  __m128i a = zero, c = zero;
  for (size_t i = 0; i < length; i += kBpp) {
    const __m128i b = load(up + i);
    const __m128i x = load(row + i);
    const __m128i b_c = _mm_sub_epi16(b, c), a_c = _mm_sub_epi16(a, c);
    const __m128i pa = absolute(b_c), pb = absolute(a_c), pc = absolute(_mm_add_epi16(b_c, a_c));
    const __m128i least = _mm_min_epi16(pa, _mm_min_epi16(pb, pc));
    const __m128i use_b = _mm_cmpeq_epi16(least, pb), use_a = _mm_cmpeq_epi16(least, pa);
    __m128i predicted = _mm_or_si128(_mm_and_si128(use_b, b), _mm_andnot_si128(use_b, c));
    predicted = _mm_or_si128(_mm_and_si128(use_a, a), _mm_andnot_si128(use_a, predicted));
    a = _mm_and_si128(_mm_add_epi16(x, predicted), _mm_set1_epi16(0xff));
    const int32_t out = _mm_cvtsi128_si32(_mm_packus_epi16(a, zero));
    std::memcpy(row + i, &out, kBpp);  // not 4 for RGB: the next byte is still filtered
    c = b;
  }
}
#endif

// Undoes one row's filter in place; `up` is the row above, unfiltered (zeros for the first).
void unfilter_row(int filter, uint8_t* row, const uint8_t* up, size_t length, int bpp, int y) {
  switch (filter) {
    case 0: return;
    case 1:
      for (size_t i = bpp; i < length; ++i) row[i] = static_cast<uint8_t>(row[i] + row[i - bpp]);
      return;
    case 2:
      for (size_t i = 0; i < length; ++i) row[i] = static_cast<uint8_t>(row[i] + up[i]);
      return;
    case 3:
      for (int i = 0; i < bpp; ++i) row[i] = static_cast<uint8_t>(row[i] + (up[i] >> 1));
      for (size_t i = bpp; i < length; ++i) {
        row[i] = static_cast<uint8_t>(row[i] + ((row[i - bpp] + up[i]) >> 1));
      }
      return;
    case 4:
#if defined(__SSE2__)
      if (bpp == 3) return unfilter_paeth_sse2<3>(row, up, length);
      if (bpp == 4) return unfilter_paeth_sse2<4>(row, up, length);
#endif
      return unfilter_paeth_scalar(row, up, length, bpp);
    default:
      throw DecodeError("corrupt PNG: row " + std::to_string(y) + " has filter type " +
                        std::to_string(filter) + ", which PNG does not define (0 to 4); the file "
                        "is damaged, replace it");
  }
}

// Columns [x0, x0 + width) of an unfiltered row, as RGB: grey replicated, alpha dropped.
void convert_row(const uint8_t* row, int channels, int x0, int width, uint8_t* rgb) {
  const uint8_t* in = row + static_cast<size_t>(x0) * channels;
  if (channels == 3) {
    std::memcpy(rgb, in, static_cast<size_t>(width) * 3);
    return;
  }
  for (int x = 0; x < width; ++x, in += channels, rgb += 3) {
    if (channels <= 2) {
      rgb[0] = rgb[1] = rgb[2] = in[0];
    } else {
      rgb[0] = in[0], rgb[1] = in[1], rgb[2] = in[2];
    }
  }
}

// Inflates the image data into the front of `rows`, having joined the IDAT chunks behind it
// (one buffer, reused from image to image: a fresh one would cost its page faults each time).
void inflate_rows(const uint8_t* file, const WholePng& png, std::vector<uint8_t>& rows,
                  size_t row_bytes) {
  const size_t expected = (row_bytes + 1) * static_cast<size_t>(png.height);
  rows.resize(expected + 4 + png.compressed_bytes);  // + 4: the SSE2 Paeth reads 4 at 3 bytes
  uint8_t* compressed = rows.data() + expected + 4;
  size_t at = 0;
  for (const auto& [offset, bytes] : png.image_data) {
    std::memcpy(compressed + at, file + offset, bytes);
    at += bytes;
  }
  libdeflate_decompressor* inflater = libdeflate_alloc_decompressor();
  if (inflater == nullptr) throw DecodeError("PNG: libdeflate could not allocate its state");
  const libdeflate_result result = libdeflate_zlib_decompress(
      inflater, compressed, png.compressed_bytes, rows.data(), expected, nullptr);
  libdeflate_free_decompressor(inflater);
  if (result == LIBDEFLATE_SUCCESS) return;
  const char* what = result == LIBDEFLATE_SHORT_OUTPUT          ? "holds fewer"
                     : result == LIBDEFLATE_INSUFFICIENT_SPACE ? "holds more"
                                                               : "is not valid zlib data (or "
                                                                 "fails its Adler-32 check) and "
                                                                 "gives other";
  throw DecodeError("corrupt PNG: its image data (" + std::to_string(png.compressed_bytes) +
                    " compressed bytes) " + what + " than the " + std::to_string(expected) +
                    " bytes its header's " + std::to_string(png.width) + " x " +
                    std::to_string(png.height) + " pixels need; the file is damaged, replace it");
}

}  // namespace

bool png_decode_whole(const uint8_t* data, size_t size, const DecodeRequest& request,
                      RgbImage& out, std::vector<uint8_t>& rows) {
  WholePng png;
  if (!read_chunks(data, size, png)) return false;
  check_image_size(png.width, png.height, request.max_pixels);
  const size_t row_bytes = static_cast<size_t>(png.width) * png.channels;
  if ((row_bytes + 1) * static_cast<size_t>(png.height) + png.compressed_bytes > kMaxWholeBytes) {
    return false;
  }
  inflate_rows(data, png, rows, row_bytes);
  int x0, x1, y0, y1;
  covering_range(request.needed.left, request.needed.width, png.width, png.width, x0, x1);
  covering_range(request.needed.top, request.needed.height, png.height, png.height, y0, y1);
  out = RgbImage{std::move(out.pixels), x1 - x0, y1 - y0, png.width, png.height,
                 png.width, png.height, x0, y0};
  out.pixels.resize(static_cast<size_t>(out.width) * static_cast<size_t>(out.height) * 3);
  const std::vector<uint8_t> zeros(row_bytes + 4, 0);  // + 4: as rows
  const uint8_t* up = zeros.data();
  for (int y = 0; y < y1; ++y) {  // rows below the region are never unfiltered
    uint8_t* row = rows.data() + static_cast<size_t>(y) * (row_bytes + 1);
    unfilter_row(row[0], row + 1, up, row_bytes, png.channels, y);
    if (y >= y0) {
      convert_row(row + 1, png.channels, x0, out.width,
                  out.pixels.data() + static_cast<size_t>(y - y0) * out.width * 3);
    }
    up = row + 1;
  }
  release_if_large(rows);
  return true;
}

}  // namespace mploader::vision::detail
