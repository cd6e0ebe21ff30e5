// One error family: every error mploader throws is an mploader::Error, so one catch takes them
// all, and each message reads "mploader: <who>: <what happened>. <Fix>." (util/errors.h).
#include "tests/error_text.h"
#include "util/errors.h"

#include <mploader/mploader.h>
#include <mploader/tune.h>

#include <catch2/catch.hpp>

#include <functional>
#include <string>

namespace test_error_family {

using namespace mploader;

namespace {

using testing_errors::mploader_error_of;

// A dataset that declares a layout and implements neither get() nor write().
struct NoReads : Dataset {
  size_t size() const override { return 4; }
  std::optional<SampleLayout> sample_layout() const override {
    return SampleLayout{{"x", at::kFloat, {2}}};
  }
};

}  // namespace

TEST_CASE("errors: detail::message forms every message alike", "[errors]") {
  CHECK(mploader::detail::message("TokenStream", "context is 0", "Give 1 or more") ==
        "mploader: TokenStream: context is 0. Give 1 or more.");
  CHECK(mploader::detail::message("tune", "an epoch gave no batch.",
                                  "Give a smaller batch size.") ==
        "mploader: tune: an epoch gave no batch. Give a smaller batch size.");
  CHECK(mploader::detail::message("", "the ring is corrupt", "") ==
        "mploader: the ring is corrupt.");
}

TEST_CASE("errors: one catch of mploader::Error takes each of the engine's errors",
          "[errors]") {
  const auto starts = Catch::StartsWith("mploader: ");
  // An option the user gave: OptionError.
  CHECK_THAT(mploader_error_of([] { TokenStream({}, TokenStreamOptions{}); }),
             starts && Catch::Contains("TokenStream: no token files given. Pass at least one"));
  CHECK_THAT(mploader_error_of([] { FixedSizeBatchSampler(nullptr, 4, false); }),
             starts && Catch::Contains("the sampler is null"));
  CHECK_THAT(mploader_error_of([] { choose_num_workers({TunePoint{}}); }),
             starts && Catch::Contains("choose_num_workers: 1 point(s)"));
  // An index or a name outside what there is: OptionError naming both.
  ConcatDataset concat({std::make_shared<NoReads>()});
  CHECK_THAT(mploader_error_of([&] { concat.locate(4); }),
             starts && Catch::Contains("ConcatDataset: index 4 is outside [0, 4)"));
  Sample sample;
  sample.set("x", at::ones({2}));
  CHECK_THAT(mploader_error_of([&] { (void)sample["y"]; }),
             starts && Catch::Contains("no tensor named 'y'; the tensors are 'x'"));
  CHECK_THAT(mploader_error_of([] {
               TextColumn(at::zeros({4}, at::kByte), at::tensor(std::vector<int64_t>{0, 5}));
             }),
             starts && Catch::Contains("TextColumn: the offsets do not rise from 0"));
  // A dataset or a collator that breaks its contract: Error, or SampleError for one sample.
  CHECK_THAT(mploader_error_of([] { (void)NoReads().get(0); }),
             starts && Catch::Contains("implements neither get() nor write()"));
  Sample wider;
  wider.set("x", at::ones({3}));
  CHECK_THAT(mploader_error_of([&] { stack_collate()->layout({sample, wider}); }),
             Catch::Contains("sample 1"));
  CHECK_THROWS_AS(stack_collate()->layout({sample, wider}), SampleError);
  CHECK_THROWS_AS(stack_collate()->layout({}), OptionError);
  // A recipe that does not read (the JSON library's own error, turned into an OptionError).
  CHECK_THAT(mploader_error_of([] { (void)TokenStream::from_recipe("{\"type\": 16}"); }),
             starts && Catch::Contains("mploader.TokenStream: its recipe does not read ("));
  // A file that cannot be read: Error naming it.
  CHECK_THAT(mploader_error_of([] { NpyArray("/nonexistent/x.npy"); }),
             Catch::Contains("/nonexistent/x.npy"));
}

}  // namespace test_error_family
