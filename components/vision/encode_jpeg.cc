// encode_jpeg() through libjpeg-turbo's libjpeg API, errors trapped as in decode_jpeg.cc
// (jpeg_trap.h).
#include <mploader/vision/encode.h>
#include <mploader/vision/image.h>

#include "util/errors.h"
#include "vision/jpeg_trap.h"

#include <mploader/errors.h>

#include <cstdlib>
#include <string>


namespace mploader::vision {
namespace {

// Compresses into a buffer libjpeg allocates (*out, freed by the caller with free()).
bool compress(const uint8_t* pixels, int width, int height, int channels, int quality,
              unsigned char** out, unsigned long* size, detail::JpegTrap& trap) {
  jpeg_compress_struct cinfo;
  detail::install_jpeg_trap(cinfo, trap);
  if (setjmp(trap.jump)) {
    jpeg_destroy_compress(&cinfo);
    return false;
  }
  jpeg_create_compress(&cinfo);
  jpeg_mem_dest(&cinfo, out, size);
  cinfo.image_width = static_cast<JDIMENSION>(width);
  cinfo.image_height = static_cast<JDIMENSION>(height);
  cinfo.input_components = channels;
  cinfo.in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(pixels) +
                   static_cast<size_t>(cinfo.next_scanline) * static_cast<size_t>(width) *
                       static_cast<size_t>(channels);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  return true;
}

}  // namespace

std::vector<uint8_t> encode_jpeg(const uint8_t* pixels, int width, int height, int channels,
                                 int quality) {
  if (width < 1 || height < 1 || width > 65500 || height > 65500 ||
      (channels != 1 && channels != 3) || quality < 1 || quality > 100) {
    throw OptionError("pixels",
                      mploader::detail::message(
                          "encode_jpeg",
                          std::to_string(width) + " x " + std::to_string(height) +
                              " pixels of " + std::to_string(channels) +
                              " channels at quality " + std::to_string(quality),
                          "Give what JPEG takes: 1 to 65500 pixels a side, 1 or 3 channels, "
                          "quality 1 to 100"));
  }
  unsigned char* data = nullptr;
  unsigned long size = 0;
  detail::JpegTrap trap;
  const bool ok = compress(pixels, width, height, channels, quality, &data, &size, trap);
  std::vector<uint8_t> bytes;
  if (ok) bytes.assign(data, data + size);
  std::free(data);
  if (!ok) throw DecodeError(std::string("encode_jpeg: libjpeg: ") + trap.message);
  return bytes;
}

}  // namespace mploader::vision
