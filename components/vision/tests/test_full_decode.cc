// ImageFolderOptions::full_decode against torchvision's PIL path: PIL's full decode, then PIL's
// antialiased bilinear resize, for JPEGs that take the DCT-scaled, cropped path by default.
#include "image_folder_test_support.h"

#include <cmath>

namespace test_full_decode {

using namespace mploader::vision;
using vision_test::ScratchDir;

namespace {

// A 640 x 480 JPEG with fine detail, which a DCT-scaled decode blurs differently than PIL's
// resize of the whole image.
void write_detailed_jpeg(const std::string& path) {
  std::vector<uint8_t> pixels(640 * 480 * 3);
  for (size_t i = 0; i < pixels.size(); ++i) {
    const size_t x = i / 3 % 640, y = i / 3 / 640;
    pixels[i] = static_cast<uint8_t>(128 + 100 * std::sin(x * 0.9 + (i % 3)) * std::cos(y * 0.7));
  }
  vision_test::write_bytes(path, encode_jpeg(pixels.data(), 640, 480, 3, 95));
}

struct Difference {
  double mean;
  int most;
};

Difference difference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  double total = 0;
  for (size_t i = 0; i < a.size(); ++i) total += std::abs(int{a[i]} - int{b[i]});
  return {total / static_cast<double>(a.size()), vision_test::max_difference(a.data(), b.data(), a.size())};
}

}  // namespace

TEST_CASE("vision: full_decode matches PIL's full decode and resize within a level") {
  ScratchDir dir;
  std::filesystem::create_directories(dir.path + "/cat");
  const std::string jpeg = dir.path + "/cat/photo.jpg";
  write_detailed_jpeg(jpeg);
  for (const Compose& transform : {Compose({Resize(Size2{60, 80})}),
                                   Compose({Resize(64), CenterCrop(56)})}) {
    INFO(transform.describe());
    const ImagePlan plan = transform.plan(640, 480, 0);
    REQUIRE(transform.min_scale(plan) <= 0.5);  // DCT-scaled by default
    const std::string out = dir.path + "/pil.rgb";
    const Rect& box = plan.source;
    REQUIRE_PIL(vision_test::pil("resize " + jpeg + " " + std::to_string(plan.out_width) + " " +
                                 std::to_string(plan.out_height) + " " +
                                 std::to_string(box.left) + " " + std::to_string(box.top) + " " +
                                 std::to_string(box.left + box.width) + " " +
                                 std::to_string(box.top + box.height) + " " + out));
    const std::vector<uint8_t> pil = vision_test::read_bytes(out);
    std::vector<uint8_t> got[2];
    for (bool full : {false, true}) {
      ImageFolderOptions options;
      options.full_decode = full;
      ImageFolder data(dir.path, transform, options);
      vision_test::write_sample(data, 0, &got[full]);
    }
    REQUIRE(got[1].size() == pil.size());
    const Difference scaled = difference(got[0], pil), full = difference(got[1], pil);
    INFO("against PIL: default " << scaled.mean << " mean, " << scaled.most << " most; full_decode "
                                 << full.mean << " mean, " << full.most << " most");
    REQUIRE(full.most <= 1);
    REQUIRE(scaled.most > 1);  // the default took the scaled path, and it shows
  }
}

}  // namespace test_full_decode
