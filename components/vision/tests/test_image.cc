// The size guard every decoder runs before it allocates.
#include <catch2/catch.hpp>

#include <mploader/vision/image.h>

namespace test_image {

using mploader::vision::check_image_size;
using mploader::vision::DecodeError;

TEST_CASE("vision: an image of no pixels is refused, naming its size") {
  REQUIRE_THROWS_WITH(check_image_size(0, 0, 1 << 20),
                      Catch::Contains("0 x 0") && Catch::Contains("no pixels"));
  REQUIRE_THROWS_AS(check_image_size(640, 0, 1 << 20), DecodeError);
}

TEST_CASE("vision: an image over the pixel limit is refused before decoding, saying the limit") {
  REQUIRE_THROWS_WITH(check_image_size(100000, 100000, mploader::vision::kDefaultMaxPixels),
                      Catch::Contains("100000 x 100000") && Catch::Contains("268435456") &&
                          Catch::Contains("max_pixels"));
  REQUIRE_NOTHROW(check_image_size(16384, 16384, mploader::vision::kDefaultMaxPixels));
}

}  // namespace test_image
