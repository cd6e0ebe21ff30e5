// Fuzzes the image decoders (vision/decode*.cc, libjpeg-turbo and libpng underneath): any bytes
// as an image file. The header is read (ImageDecoder::info), then the image decoded whole and
// as a crop at a reduced scale, as ImageFolder's transforms ask for. The pixel limit is 2^16 so
// that a header cannot make the fuzzer allocate gigabytes; a decoded image must fill its buffer
// exactly. Refusing with DecodeError is fine; a crash, UB, another exception is not.
#include <mploader/vision/decode.h>
#include <mploader/vision/image.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

using mploader::vision::RgbImage;

void check_buffer(const RgbImage& image) {
  const size_t want = static_cast<size_t>(image.width) * image.height * 3;
  if (image.width < 1 || image.height < 1 || image.pixels.size() < want) {
    std::fprintf(stderr, "decoded %dx%d into %zu bytes\n", image.width, image.height,
                 image.pixels.size());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static mploader::vision::ImageDecoder decoder(int64_t{1} << 16);
  try {
    const mploader::vision::ImageInfo info = decoder.info(data, size);
    RgbImage image;
    decoder.decode(data, size, image);
    check_buffer(image);
    // The lower right quarter, at a quarter of the size or more.
    const mploader::vision::Rect quarter{info.width / 2.0, info.height / 2.0, info.width / 2.0,
                                         info.height / 2.0};
    decoder.decode(data, size, quarter, 0.25, image);
    check_buffer(image);
  } catch (const mploader::vision::DecodeError&) {
  }
  return 0;
}
