/// @file
/// encode_jpeg(): pixels to a JPEG file's bytes, for making image folders (test sets, caches,
/// the examples' Fashion-MNIST folder).
#pragma once

#include <cstdint>
#include <vector>

namespace mploader::vision {

/// Encodes `height` rows of `width` pixels of `channels` bytes each (1: grey, 3: RGB) at
/// `quality` (1 to 100), with 4:2:0 chroma for RGB. Throws OptionError("pixels", ...) for a
/// bad argument and DecodeError (mploader/vision/image.h) if libjpeg fails.
std::vector<uint8_t> encode_jpeg(const uint8_t* pixels, int width, int height, int channels,
                                 int quality);

}  // namespace mploader::vision
