// vision/: images as a component of its own (mploader::vision): decoding, transforms, ImageFolder.
#include <mploader/vision/image.h>

namespace mploader::vision {

void check_image_size(int64_t width, int64_t height, int64_t max_pixels) {
  if (width < 1 || height < 1) {
    throw DecodeError("the image is " + std::to_string(width) + " x " + std::to_string(height) +
                      " pixels: it has no pixels to decode");
  }
  // Each side is below 2^31 in every format read here, so the product cannot overflow.
  if (width * height > max_pixels) {
    throw DecodeError("the image is " + std::to_string(width) + " x " + std::to_string(height) +
                      " = " + std::to_string(width * height) + " pixels, more than the limit of " +
                      std::to_string(max_pixels) +
                      " (ImageFolderOptions::max_pixels): it was refused before decoding; raise "
                      "the limit if such images are expected");
  }
}

}  // namespace mploader::vision
