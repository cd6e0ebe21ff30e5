// ImageDecoder against PIL's convert('RGB') (what torchvision's ImageFolder loader gives), for
// every colour type; DCT-scaled and region decodes; and files that are not images, cut short,
// or claim to be huge, which must be a DecodeError and never a crash.
#include "vision_test_support.h"

#include <mploader/vision/decode.h>
#include <mploader/vision/encode.h>
#include <mploader/vision/transforms.h>

#include <cmath>
#include <random>

namespace test_decode {

using namespace mploader::vision;
using vision_test::max_difference;
using vision_test::read_bytes;

namespace {

struct Reference {
  std::vector<uint8_t> rgb;
  int width = 0, height = 0;
};

Reference reference(const std::string& dir, const std::string& name) {
  Reference r;
  r.rgb = read_bytes(dir + "/" + name + ".rgb");
  std::ifstream(dir + "/" + name + ".size") >> r.width >> r.height;
  return r;
}

// Decodes the whole of a file's bytes, reusing one decoder, as ImageFolder's workers do.
struct WholeDecode {
  ImageDecoder decoder;
  RgbImage image;
  void operator()(const std::vector<uint8_t>& bytes) {
    decoder.decode(bytes.data(), bytes.size(), Rect{0, 0, 1e9, 1e9}, 1.0, image);
  }
};

// The images pil_reference.py makes, made once for all the tests of this file.
const std::string& reference_dir() {
  static vision_test::ScratchDir dir;
  static const bool made = vision_test::pil("images " + dir.path);
  static const std::string none;
  return made ? dir.path : none;
}

RgbImage decode_whole(const std::string& path) {
  const std::vector<uint8_t> file = read_bytes(path);
  ImageDecoder decoder;
  RgbImage image;
  decoder.decode(file.data(), file.size(), image);
  return image;
}

}  // namespace

TEST_CASE("vision: PNGs of every colour type decode exactly as PIL's convert('RGB')") {
  const std::string& dir = reference_dir();
  REQUIRE_PIL(!dir.empty());
  for (const char* name : {"rgb.png", "rgba.png", "gray.png", "gray_alpha.png", "palette.png",
                           "palette_trns.png", "bilevel.png", "interlaced.png", "rgb16.png",
                           "filters_rgb.png", "filters_rgba.png", "filters_gray.png",
                           "filters_gray_alpha.png"}) {
    INFO(name);
    const Reference want = reference(dir, name);
    const RgbImage got = decode_whole(dir + "/" + name);
    REQUIRE(got.width == want.width);
    REQUIRE(got.height == want.height);
    REQUIRE(got.pixels == want.rgb);
  }
}

TEST_CASE("vision: JPEGs decode as PIL's convert('RGB') within a level") {
  // Measured: identical to Pillow 13 (with its own libjpeg-turbo) for every file here, CMYK
  // included (Pillow's integer formula on both sides). A level is allowed for another Pillow
  // whose libjpeg-turbo rounds its colour conversion or upsampling differently.
  const std::string& dir = reference_dir();
  REQUIRE_PIL(!dir.empty());
  for (const char* name : {"rgb444.jpg", "rgb420.jpg", "progressive.jpg", "gray.jpg", "cmyk.jpg"}) {
    INFO(name);
    const Reference want = reference(dir, name);
    const RgbImage got = decode_whole(dir + "/" + name);
    REQUIRE(got.width == want.width);
    REQUIRE(got.height == want.height);
    REQUIRE(max_difference(got.pixels.data(), want.rgb.data(), want.rgb.size()) <= 1);
  }
}

TEST_CASE("vision: a DCT-scaled JPEG decode matches PIL's draft() at the same scale") {
  const std::string& dir = reference_dir();
  REQUIRE_PIL(!dir.empty());
  for (const char* name : {"rgb420.jpg", "gray.jpg", "progressive.jpg"}) {
    INFO(name);
    const Reference want = reference(dir, std::string(name) + ".draft");
    const std::vector<uint8_t> file = read_bytes(dir + "/" + name);
    ImageDecoder decoder;
    RgbImage got;
    decoder.decode(file.data(), file.size(), Rect{0, 0, 203, 157}, 0.25, got);
    REQUIRE(got.scaled_width == want.width);
    REQUIRE(got.width == want.width);
    REQUIRE(got.height == want.height);
    REQUIRE(max_difference(got.pixels.data(), want.rgb.data(), want.rgb.size()) <= 1);
  }
}

TEST_CASE("vision: a region decode reads only the region's rows and gives the full decode's "
          "pixels") {
  const std::string& dir = reference_dir();
  REQUIRE_PIL(!dir.empty());
  for (const char* name : {"rgb420.jpg", "progressive.jpg", "rgb.png", "interlaced.png"}) {
    INFO(name);
    const std::vector<uint8_t> file = read_bytes(dir + "/" + std::string(name));
    ImageDecoder decoder;
    for (double scale : {1.0, 0.5}) {
      RgbImage whole, part;
      decoder.decode(file.data(), file.size(), Rect{0, 0, 203, 157}, scale, whole);
      decoder.decode(file.data(), file.size(), Rect{70.5, 40, 60, 50}, scale, part);
      REQUIRE(part.scaled_width == whole.scaled_width);
      // JPEG: the scale asked for (n/8); PNG: always 1.
      const double s = static_cast<double>(part.scaled_width) / part.source_width;
      REQUIRE(s == Approx(std::string(name).find(".jpg") != std::string::npos ? scale : 1.0).epsilon(0.01));
      REQUIRE(part.height <= static_cast<int>(51 * s) + 2);  // rows of the region alone
      REQUIRE(part.width < whole.width);
      REQUIRE(part.offset_x <= static_cast<int>(70.5 * s));
      REQUIRE(part.offset_x + part.width >= static_cast<int>(130.5 * s));
      // The same pixels as the whole decode, over the region asked for. (A cropped decode's
      // outermost columns differ: fancy upsampling cannot see past them; the decoder widens
      // its crop by a column so that they lie outside the region.)
      const int first = static_cast<int>(70.5 * s) - part.offset_x;
      const int count = static_cast<int>(std::ceil(130.5 * s)) - part.offset_x - first;
      int worst = 0;
      for (int y = 0; y < part.height; ++y) {
        const uint8_t* a = &part.pixels[(static_cast<size_t>(y) * part.width + first) * 3];
        const uint8_t* b = &whole.pixels[(static_cast<size_t>(y + part.offset_y) * whole.width +
                                          static_cast<size_t>(part.offset_x + first)) * 3];
        worst = std::max(worst, max_difference(a, b, static_cast<size_t>(count) * 3));
      }
      REQUIRE(worst == 0);
    }
  }
}

TEST_CASE("vision: a 224-pixel crop of a 12-megapixel photo decodes a small part of it") {
  vision_test::ScratchDir dir;
  REQUIRE_PIL(vision_test::pil("photo " + dir.path + "/photo.jpg"));
  const std::vector<uint8_t> file = read_bytes(dir.path + "/photo.jpg");
  const Compose train({RandomResizedCrop(224), RandomHorizontalFlip()});
  ImageDecoder decoder;
  RgbImage image;
  size_t most = 0;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    const ImagePlan plan = train.plan(4000, 3000, seed);
    decoder.decode(file.data(), file.size(), train.needed_region(plan, 4000, 3000),
                   train.min_scale(plan), image);
    const size_t decoded = static_cast<size_t>(image.width) * static_cast<size_t>(image.height);
    most = std::max(most, decoded);
    // At least one decoded pixel per output pixel, as min_scale asks.
    REQUIRE(plan.source.width * image.scaled_width / 4000 >= 224 * 0.99);
  }
  // The scale is the least of 1/8, 1/4, 1/2 and 1 that keeps 224 pixels on the crop's shorter side, so that side
  // decodes to fewer than 448 (n = 2 just above 1/8) and the longer one, at ratio 4/3, to fewer
  // than 600: at most 0.3 million pixels with the margins, 2.5 % of the 12 million.
  INFO("most pixels decoded for one crop: " << most);
  REQUIRE(most <= 300000);
}

TEST_CASE("vision: files that are no image, cut short or claiming to be huge are DecodeErrors") {
  const std::string& dir = reference_dir();
  REQUIRE_PIL(!dir.empty());
  WholeDecode decode;
  ImageDecoder& decoder = decode.decoder;
  REQUIRE_THROWS_WITH(decode({}), Catch::Contains("empty"));
  const std::string text = "just some text";
  REQUIRE_THROWS_WITH(decode(std::vector<uint8_t>(text.begin(), text.end())),
                      Catch::Contains("not a JPEG or PNG") && Catch::Contains("6a 75 73 74"));
  std::vector<uint8_t> jpeg = read_bytes(dir + "/rgb420.jpg");
  jpeg.resize(jpeg.size() / 2);
  REQUIRE_THROWS_WITH(decode(jpeg), Catch::Contains("JPEG") && Catch::Contains("Premature end"));
  std::vector<uint8_t> png = read_bytes(dir + "/rgb.png");
  png.resize(png.size() / 2);
  REQUIRE_THROWS_WITH(decode(png), Catch::Contains("truncated"));
  // IHDR claiming 100000 x 100000, then 0 x 0 (CRCs made right by the PNG writer's rules).
  std::vector<uint8_t> huge = read_bytes(dir + "/rgb.png");
  auto set_size = [](std::vector<uint8_t>& p, uint32_t w, uint32_t h) {
    for (int i = 0; i < 4; ++i) {
      p[16 + i] = static_cast<uint8_t>(w >> (24 - 8 * i));
      p[20 + i] = static_cast<uint8_t>(h >> (24 - 8 * i));
    }
    uint32_t crc = 0xffffffffu;  // over "IHDR" and its 13 bytes
    for (int i = 12; i < 29; ++i) {
      crc ^= p[static_cast<size_t>(i)];
      for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
    }
    crc ^= 0xffffffffu;
    for (int i = 0; i < 4; ++i) p[29 + i] = static_cast<uint8_t>(crc >> (24 - 8 * i));
  };
  set_size(huge, 100000, 100000);
  REQUIRE_THROWS_WITH(decoder.info(huge.data(), huge.size()),
                      Catch::Contains("100000 x 100000") && Catch::Contains("refused"));
  REQUIRE_THROWS_AS(decode(huge), DecodeError);
  set_size(huge, 0, 0);
  REQUIRE_THROWS_AS(decode(huge), DecodeError);
}

TEST_CASE("vision: corrupted JPEG and PNG bytes never crash the decoder") {
  const std::string& dir = reference_dir();
  REQUIRE_PIL(!dir.empty());
  std::mt19937 rng(1);
  ImageDecoder decoder;
  RgbImage image;
  int decoded = 0, refused = 0;
  for (const char* name : {"rgb420.jpg", "progressive.jpg", "palette.png", "interlaced.png",
                           "filters_rgba.png"}) {
    const std::vector<uint8_t> original = read_bytes(dir + "/" + name);
    for (int trial = 0; trial < 150; ++trial) {
      std::vector<uint8_t> bytes = original;
      const int flips = 1 + static_cast<int>(rng() % 8);
      for (int f = 0; f < flips; ++f) bytes[rng() % bytes.size()] = static_cast<uint8_t>(rng());
      if (trial % 3 == 0) bytes.resize(rng() % bytes.size());
      try {
        decoder.decode(bytes.data(), bytes.size(), Rect{10, 10, 100, 100}, 0.5, image);
        ++decoded;
      } catch (const DecodeError&) {
        ++refused;
      }
    }
  }
  INFO(decoded << " decoded, " << refused << " refused");
  REQUIRE(decoded + refused == 750);
  REQUIRE(refused > 0);
}

TEST_CASE("vision: a damaged PNG names what is wrong: a chunk's CRC, a row's filter, its size") {
  const std::string& dir = reference_dir();
  REQUIRE_PIL(!dir.empty());
  WholeDecode decode;
  ImageDecoder& decoder = decode.decoder;
  std::vector<uint8_t> flipped = read_bytes(dir + "/filters_rgb.png");
  flipped[60] ^= 0x10;  // inside the first IDAT chunk's data
  REQUIRE_THROWS_WITH(decode(flipped), Catch::Contains("CRC of its IDAT chunk") &&
                                           Catch::Contains("replace it"));
  REQUIRE_THROWS_WITH(decode(read_bytes(dir + "/damaged_filter.png")),
                      Catch::Contains("row 5 has filter type 7"));
  // 203 x 157 RGBA: 157 rows of 1 + 812 bytes; one row fewer, one row more.
  REQUIRE_THROWS_WITH(decode(read_bytes(dir + "/damaged_short.png")),
                      Catch::Contains("holds fewer than the 127641 bytes") &&
                          Catch::Contains("203 x 157"));
  REQUIRE_THROWS_WITH(decode(read_bytes(dir + "/damaged_long.png")),
                      Catch::Contains("holds more than the 127641 bytes"));
  // A region of the top rows only: the rows below are not unfiltered, yet the damage is seen.
  const std::vector<uint8_t> cut = read_bytes(dir + "/damaged_short.png");
  REQUIRE_THROWS_AS(decoder.decode(cut.data(), cut.size(), Rect{0, 0, 50, 2}, 1.0, decode.image),
                    DecodeError);
}

TEST_CASE("vision: encode_jpeg writes what the decoder reads back, grey or RGB") {
  for (int channels : {1, 3}) {
    std::vector<uint8_t> pixels(static_cast<size_t>(64) * 48 * channels);
    for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>((i / channels) % 64 * 4);
    const std::vector<uint8_t> jpeg = mploader::vision::encode_jpeg(pixels.data(), 64, 48, channels, 95);
    ImageDecoder decoder;
    RgbImage image;
    decoder.decode(jpeg.data(), jpeg.size(), image);
    REQUIRE(image.width == 64);
    REQUIRE(image.height == 48);
    double error = 0;
    for (size_t p = 0; p < 64 * 48; ++p) {
      for (int c = 0; c < 3; ++c) {
        error += std::abs(int{image.pixels[p * 3 + c]} - int{pixels[p * channels + (channels == 3 ? c : 0)]});
      }
    }
    REQUIRE(error / (64 * 48 * 3) < 3.0);  // quality 95: a level or two on average
  }
  const uint8_t one = 0;
  REQUIRE_THROWS_WITH(mploader::vision::encode_jpeg(&one, 0, 1, 3, 90),
                      Catch::Contains("0 x 1") && Catch::Contains("1 to 65500"));
  REQUIRE_THROWS_AS(mploader::vision::encode_jpeg(&one, 1, 1, 2, 90), mploader::OptionError);
}

TEST_CASE("vision: a truncated JPEG or PNG is refused even when the region asked for is whole") {
  // A crop of the top rows never reaches the missing ones: the file must still be bad, in every
  // epoch, whatever the crop.
  vision_test::ScratchDir dir;
  vision_test::write_jpeg(dir.path + "/tall.jpg", 64, 512);
  std::vector<uint8_t> jpeg = read_bytes(dir.path + "/tall.jpg");
  ImageDecoder decoder;
  RgbImage image;
  const Rect top{0, 0, 64, 16};
  decoder.decode(jpeg.data(), jpeg.size(), top, 1.0, image);  // whole: fine
  jpeg.resize(jpeg.size() * 2 / 3);
  REQUIRE_THROWS_WITH(decoder.decode(jpeg.data(), jpeg.size(), top, 1.0, image),
                      Catch::Contains("truncated") && Catch::Contains("JPEG"));
  const std::string& references = reference_dir();
  REQUIRE_PIL(!references.empty());
  std::vector<uint8_t> png = read_bytes(references + "/rgb.png");
  const Rect top_rows{0, 0, 203, 8};
  decoder.decode(png.data(), png.size(), top_rows, 1.0, image);
  png.resize(png.size() * 2 / 3);
  REQUIRE_THROWS_WITH(decoder.decode(png.data(), png.size(), top_rows, 1.0, image),
                      Catch::Contains("truncated") && Catch::Contains("PNG"));
}

}  // namespace test_decode
