// Compose: torchvision's geometry (RandomResizedCrop's get_params, Resize's sizes, CenterCrop's
// offsets), the checks at construction, and render() against PIL's antialiased resize.
#include "tests/error_text.h"
#include "vision_test_support.h"

#include <mploader/vision/decode.h>
#include <mploader/vision/encode.h>
#include <mploader/vision/transforms.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace test_transforms {

using namespace mploader::vision;

namespace {

RgbImage full_scale(int width, int height) {
  RgbImage image;
  image.width = image.source_width = image.scaled_width = width;
  image.height = image.source_height = image.scaled_height = height;
  image.pixels.resize(static_cast<size_t>(width) * height * 3);
  for (size_t i = 0; i < image.pixels.size(); ++i) {
    image.pixels[i] = static_cast<uint8_t>((i * 7 + (i / 3 / width) * 13) % 251);
  }
  return image;
}

}  // namespace

TEST_CASE("vision: RandomResizedCrop boxes stay in the image and within scale and ratio") {
  const Compose crop({RandomResizedCrop(224)});
  int fallbacks = 0;
  for (uint64_t seed = 0; seed < 2000; ++seed) {
    const ImagePlan p = crop.plan(500, 375, seed);
    REQUIRE(p.source.left >= 0);
    REQUIRE(p.source.top >= 0);
    REQUIRE(p.source.left + p.source.width <= 500);
    REQUIRE(p.source.top + p.source.height <= 375);
    const double share = p.source.width * p.source.height / (500.0 * 375.0);
    const double ratio = p.source.width / p.source.height;
    // Rounding the sides to whole pixels moves share and ratio a little off their draws.
    REQUIRE(share >= 0.08 * 0.95);
    REQUIRE(share <= 1.0);
    if (ratio < 0.75 * 0.97 || ratio > 4.0 / 3.0 * 1.03) ++fallbacks;
    REQUIRE(p.out_width == 224);
    REQUIRE(p.out_height == 224);
  }
  REQUIRE(fallbacks == 0);
  // The same seed, the same box; another seed, another box.
  const ImagePlan a = crop.plan(500, 375, 42), b = crop.plan(500, 375, 42), c = crop.plan(500, 375, 43);
  REQUIRE(a.source.left == b.source.left);
  REQUIRE(a.source.width == b.source.width);
  REQUIRE((a.source.left != c.source.left || a.source.width != c.source.width));
}

TEST_CASE("vision: RandomResizedCrop falls back to a centre crop clamped to the ratio range") {
  // 1000 x 10: no box of 8 % or more of the area has a ratio within [3/4, 4/3] inside it.
  const ImagePlan p = Compose({RandomResizedCrop(32)}).plan(1000, 10, 7);
  REQUIRE(p.source.height == 10);
  REQUIRE(p.source.width == 13);  // round(10 * 4 / 3)
  REQUIRE(p.source.left == (1000 - 13) / 2);
}

TEST_CASE("vision: Resize and CenterCrop follow torchvision's sizes and offsets") {
  // Resize(256) of 640 x 480 is 341 x 256; CenterCrop(224) then starts at round(58.5) = 58
  // (Python rounds halves to even) and round(16) = 16, in the resized image.
  const ImagePlan p = Compose({Resize(256), CenterCrop(224)}).plan(640, 480, 0);
  REQUIRE(p.out_width == 224);
  REQUIRE(p.source.left == Approx(58 * 640.0 / 341));
  REQUIRE(p.source.top == Approx(16 * 480.0 / 256));
  REQUIRE(p.source.width == Approx(224 * 640.0 / 341));
  // max_size caps the longer side: 256 * 1000 / 100 = 2560 > 500 gives 500 x 50.
  const ImagePlan capped = Compose({Resize(256, 500), CenterCrop(40)}).plan(1000, 100, 0);
  REQUIRE(capped.source.width == Approx(40 * 1000.0 / 500));
  REQUIRE(capped.source.height == Approx(40 * 100.0 / 50));
  REQUIRE_THROWS_WITH(Compose({Resize(200), CenterCrop(224)}).plan(100, 40, 0),
                      Catch::Contains("CenterCrop(224, 224) is larger than the image") &&
                          Catch::Contains("200 x 500"));
  REQUIRE_THROWS_AS(Compose({CenterCrop(224)}).plan(200, 300, 0), TransformError);
}

TEST_CASE("vision: RandomHorizontalFlip flips by its probability, and a crop after it mirrors") {
  REQUIRE_FALSE(Compose({RandomHorizontalFlip(0.0), CenterCrop(8)}).plan(20, 20, 1).flip);
  REQUIRE(Compose({RandomHorizontalFlip(1.0), CenterCrop(8)}).plan(20, 20, 1).flip);
  int flips = 0;
  const Compose half({RandomHorizontalFlip(), CenterCrop(8)});
  for (uint64_t seed = 0; seed < 1000; ++seed) flips += half.plan(20, 20, seed).flip;
  REQUIRE(flips > 420);
  REQUIRE(flips < 580);
  // Flip, then a crop at x = 0 of the mirrored image: the source's right edge.
  const ImagePlan p = Compose({RandomHorizontalFlip(1.0), Resize(Size2{10, 30}),
                               CenterCrop(Size2{10, 10})}).plan(30, 10, 0);
  REQUIRE(p.source.left == Approx(10));
  const ImagePlan q = Compose({RandomHorizontalFlip(1.0), RandomResizedCrop(10, {0.1, 0.1}, {1, 1})})
                          .plan(100, 100, 9);
  const ImagePlan r = Compose({RandomHorizontalFlip(0.0), RandomResizedCrop(10, {0.1, 0.1}, {1, 1})})
                          .plan(100, 100, 9);
  REQUIRE(q.source.left == Approx(100 - r.source.left - r.source.width));
}

TEST_CASE("vision: Compose refuses what cannot give one output shape, naming the fix") {
  REQUIRE_THROWS_WITH(Compose({Resize(256)}), Catch::Contains("End the geometric transforms with"));
  REQUIRE_THROWS_WITH(Compose({CenterCrop(224), Resize(256)}), Catch::Contains("depends on the input"));
  REQUIRE_THROWS_WITH(Compose({CenterCrop(8), Normalize({0, 0, 0}, {1, 1, 1})}),
                      Catch::Contains("transform 1") && Catch::Contains("needs ToTensor()"));
  REQUIRE_THROWS_WITH(Compose({ToTensor(), CenterCrop(8)}), Catch::Contains("before ToTensor()"));
  REQUIRE_THROWS_WITH(Compose({RandomResizedCrop(8, {0.5, 0.1})}), Catch::Contains("scale"));
  REQUIRE_THROWS_WITH(Compose({CenterCrop(8), RandomHorizontalFlip(2)}), Catch::Contains("p must"));
  REQUIRE_THROWS_WITH(Compose({CenterCrop(8), ToTensor(), Normalize({0, 0, 0}, {1, 0, 1})}),
                      Catch::Contains("std"));
  const Compose ok({RandomResizedCrop(224), RandomHorizontalFlip(), ToTensor(),
                    Normalize({0.485, 0.456, 0.406}, {0.229, 0.224, 0.225})});
  REQUIRE(ok.output_shape() == std::vector<int64_t>{3, 224, 224});
  REQUIRE(ok.output_bytes() == 3 * 224 * 224 * 4);
  REQUIRE(ok.describe().find("RandomResizedCrop(size=(224, 224), scale=(0.08, 1)") == 8);
  REQUIRE(Compose({CenterCrop(Size2{4, 6})}).output_shape() == std::vector<int64_t>{4, 6, 3});
}

TEST_CASE("vision: render matches PIL's antialiased bilinear resize within a level") {
  vision_test::ScratchDir dir;
  const RgbImage source = full_scale(640, 480);
  // PIL reads the same pixels from a PNG.
  std::vector<uint8_t> ppm;
  const std::string header = "P6\n640 480\n255\n";
  ppm.insert(ppm.end(), header.begin(), header.end());
  ppm.insert(ppm.end(), source.pixels.begin(), source.pixels.end());
  vision_test::write_bytes(dir.path + "/source.ppm", ppm);
  struct Case {
    Rect box;
    int width, height;
  };
  // Shrinking by 2.86 x 2.14, enlarging, and a box with fractional edges.
  for (const Case& c : {Case{{0, 0, 640, 480}, 224, 224}, Case{{100, 50, 40, 30}, 224, 160},
                        Case{{13.25, 7.5, 301.5, 222.75}, 96, 80}}) {
    const std::string out = dir.path + "/out.rgb";
    REQUIRE_PIL(vision_test::pil("resize " + dir.path + "/source.ppm " + std::to_string(c.width) +
                                 " " + std::to_string(c.height) + " " + std::to_string(c.box.left) +
                                 " " + std::to_string(c.box.top) + " " +
                                 std::to_string(c.box.left + c.box.width) + " " +
                                 std::to_string(c.box.top + c.box.height) + " " + out));
    const std::vector<uint8_t> want = vision_test::read_bytes(out);
    const Compose resize({Resize(Size2{c.height, c.width})});
    std::vector<uint8_t> got(resize.output_bytes());
    RenderScratch scratch;
    resize.render(source, ImagePlan{c.box, false, c.height, c.width}, got.data(), scratch);
    REQUIRE(want.size() == got.size());
    // PIL rounds to 8 bits between its horizontal and vertical passes; we keep floats.
    INFO("box " << c.box.left << " " << c.box.top << " " << c.box.width << " " << c.box.height);
    REQUIRE(vision_test::max_difference(got.data(), want.data(), got.size()) <= 1);
  }
}

TEST_CASE("vision: render's float output is the uint8 output normalized, and a flip mirrors it") {
  const RgbImage source = full_scale(300, 200);
  const ImagePlan plan{{20, 10, 250, 170}, false, 64, 96};
  const Compose bytes({Resize(Size2{64, 96})});
  const Compose floats({Resize(Size2{64, 96}), ToTensor(), Normalize({0.5, 0.4, 0.3}, {0.2, 0.25, 0.3})});
  std::vector<uint8_t> u(bytes.output_bytes()), mirrored(bytes.output_bytes());
  std::vector<float> f(floats.output_bytes() / sizeof(float));
  RenderScratch scratch;
  bytes.render(source, plan, u.data(), scratch);
  floats.render(source, plan, f.data(), scratch);
  ImagePlan flipped = plan;
  flipped.flip = true;
  bytes.render(source, flipped, mirrored.data(), scratch);
  const double mean[3] = {0.5, 0.4, 0.3}, std[3] = {0.2, 0.25, 0.3};
  for (int y = 0; y < 64; ++y) {
    for (int x = 0; x < 96; ++x) {
      for (int c = 0; c < 3; ++c) {
        const double from_byte = (u[(y * 96 + x) * 3 + c] / 255.0 - mean[c]) / std[c];
        REQUIRE(f[static_cast<size_t>(c * 64 * 96 + y * 96 + x)] ==
                Approx(from_byte).margin(0.51 / 255 / std[c]));
        REQUIRE(mirrored[(y * 96 + (95 - x)) * 3 + c] == u[(y * 96 + x) * 3 + c]);
      }
    }
  }
}

TEST_CASE("vision: render reads a DCT-scaled, cropped decode through its coordinates") {
  // The same 2x-reduced picture, whole and as a buffer of its middle: the same output.
  const RgbImage half = full_scale(160, 120);
  RgbImage cropped = half;
  cropped.offset_x = 40;
  cropped.offset_y = 30;
  cropped.width = 80;
  cropped.height = 60;
  cropped.pixels.clear();
  for (int y = 30; y < 90; ++y) {
    const auto row = half.pixels.begin() + (y * 160 + 40) * 3;
    cropped.pixels.insert(cropped.pixels.end(), row, row + 80 * 3);
  }
  RgbImage whole = half;
  for (RgbImage* image : {&whole, &cropped}) {
    image->source_width = 320;
    image->source_height = 240;
  }
  const Compose resize({Resize(Size2{20, 30})});
  const ImagePlan plan{{100, 80, 120, 80}, false, 20, 30};  // inside the crop, filter reach too
  std::vector<uint8_t> a(resize.output_bytes()), b(resize.output_bytes());
  RenderScratch scratch;
  resize.render(whole, plan, a.data(), scratch);
  resize.render(cropped, plan, b.data(), scratch);
  REQUIRE(a == b);
  REQUIRE(resize.min_scale(plan) == Approx(0.25));
}

TEST_CASE("vision: Resize of a panorama too wide for an int says so with the image's size") {
  // 2^28 x 1: Resize(256) would make it 256 x 2^36.
  const Compose resize({Resize(256), CenterCrop(224)});
  REQUIRE_THROWS_AS(resize.plan(1 << 28, 1, 0), TransformError);
  REQUIRE_THROWS_WITH(resize.plan(1 << 28, 1, 0),
                      Catch::Contains("1 x 268435456") && Catch::Contains("max_size"));
  // max_size keeps it in range: the longer side is capped before anything overflows.
  REQUIRE_THROWS_WITH(Compose({Resize(256, 4096), CenterCrop(224)}).plan(1 << 28, 1, 0),
                      Catch::Contains("CenterCrop(224, 224) is larger than the image"));
}

TEST_CASE("vision: Normalize refuses a mean that is not a finite number") {
  for (double bad : {std::nan(""), HUGE_VAL}) {
    REQUIRE_THROWS_WITH(Compose({CenterCrop(8), ToTensor(), Normalize({0.5, bad, 0.5}, {1, 1, 1})}),
                        Catch::Contains("mean"));
  }
}

// The component's errors are mploader::Errors: one catch (const mploader::Error&) takes them.
TEST_CASE("vision: a DecodeError, a TransformError and an OptionError are all mploader::Errors") {
  using testing_errors::mploader_error_of;
  const std::vector<uint8_t> junk{'n', 'o', 't', ' ', 'a', 'n', ' ', 'i', 'm', 'a', 'g', 'e'};
  ImageDecoder decoder;
  CHECK_THAT(mploader_error_of([&] { (void)decoder.info(junk.data(), junk.size()); }),
             Catch::Contains("not a JPEG or PNG"));
  CHECK_THAT(mploader_error_of([] { (void)Compose({CenterCrop(224)}).plan(200, 300, 0); }),
             Catch::Contains("CenterCrop(224, 224)"));
  CHECK_THAT(mploader_error_of([] { Compose({Resize(256)}); }),
             Catch::StartsWith("mploader: Compose: ") && Catch::Contains("End the geometric"));
  const uint8_t pixel = 0;
  CHECK_THAT(mploader_error_of([&] { (void)encode_jpeg(&pixel, 1, 1, 2, 90); }),
             Catch::StartsWith("mploader: encode_jpeg: 1 x 1 pixels of 2 channels"));
}

}  // namespace test_transforms
