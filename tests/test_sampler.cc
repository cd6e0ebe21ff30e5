// Samplers: sequential order, seeded shuffling that matches torch.randperm, batching.
#include "error_text.h"
#include "test_datasets.h"

#include <mploader/distributed_sampler.h>
#include <mploader/sampler.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>

namespace test_sampler {

using mploader::FixedSizeBatchSampler;
using mploader::RandomSampler;
using mploader::SequentialSampler;

TEST_CASE("sampler: sequential is 0..n-1", "[sampler]") {
  SequentialSampler s;
  CHECK(s.indices(5, 3) == std::vector<int64_t>{0, 1, 2, 3, 4});
  CHECK(s.indices(0, 0).empty());
}

TEST_CASE("sampler: random matches torch.randperm with generator seeded seed + epoch",
          "[sampler]") {
  // Vectors printed by PyTorch 1.13:
  //   g = torch.Generator(); g.manual_seed(s); torch.randperm(n, generator=g)
  RandomSampler seed40(40);
  CHECK(seed40.indices(10, 2) == std::vector<int64_t>{2, 6, 1, 8, 4, 5, 0, 9, 3, 7});
  RandomSampler seed7(7);
  CHECK(seed7.indices(16, 0) ==
        std::vector<int64_t>{15, 8, 0, 7, 11, 2, 13, 12, 3, 1, 14, 9, 4, 6, 10, 5});
  RandomSampler seed0(0);
  CHECK(seed0.indices(5, 0) == std::vector<int64_t>{4, 0, 1, 3, 2});
}

TEST_CASE("sampler: random is a permutation, deterministic, different per epoch",
          "[sampler]") {
  RandomSampler s(123);
  auto a = s.indices(1000, 0);
  auto b = s.indices(1000, 0);
  auto c = s.indices(1000, 1);
  CHECK(a == b);
  CHECK(a != c);
  std::sort(c.begin(), c.end());
  std::vector<int64_t> all(1000);
  std::iota(all.begin(), all.end(), 0);
  CHECK(c == all);
}

TEST_CASE("batch sampler: keeps or drops the short last batch", "[sampler]") {
  auto seq = std::make_shared<SequentialSampler>();
  FixedSizeBatchSampler keep(seq, 4, false);
  auto batches = keep.batches(10, 0);
  REQUIRE(batches.size() == 3);
  CHECK(batches[2] == std::vector<int64_t>{8, 9});
  FixedSizeBatchSampler drop(seq, 4, true);
  CHECK(drop.batches(10, 0).size() == 2);
  CHECK(drop.batches(3, 0).empty());
  CHECK_THROWS_AS(FixedSizeBatchSampler(seq, 0, false), mploader::OptionError);
}

TEST_CASE("sampler: an epoch over more samples than its plan can hold is an OptionError",
          "[sampler]") {
  using testing_errors::option_error;
  const size_t too_many = size_t{1} << 40;  // 8 TiB of indices
  auto sequential = std::make_shared<mploader::SequentialSampler>();
  auto random = std::make_shared<mploader::RandomSampler>(3);
  auto distributed = std::make_shared<mploader::DistributedSampler>(2, 1);
  for (const std::shared_ptr<mploader::Sampler>& s :
       std::vector<std::shared_ptr<mploader::Sampler>>{sequential, random, distributed}) {
    CHECK_THAT(option_error([&] { s->indices(too_many, 0); }),
               Catch::StartsWith("sampler:") && Catch::Contains("1099511627776 samples") &&
                   Catch::Contains("1000000000"));
    CHECK(s->indices(1000, 0).size() == (s == distributed ? 500 : 1000));
  }
  // When the Loader is built, before a worker starts or an index is allocated.
  class Huge : public testing_datasets::CountingDataset {
   public:
    Huge() : CountingDataset(size_t{1} << 40) {}
  };
  for (int which = 0; which < 3; ++which) {
    CAPTURE(which);
    mploader::LoaderOptions o;
    o.shuffle = which == 1;  // the Loader's own SequentialSampler, then RandomSampler
    if (which == 2) o.sampler = distributed;
    o.num_workers = 1;
    CHECK_THAT(option_error([&] { mploader::Loader(std::make_shared<Huge>(), o); }),
               Catch::StartsWith("sampler:") && Catch::Contains("1099511627776 samples"));
  }
}

}  // namespace test_sampler
