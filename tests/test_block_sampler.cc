// BlockShuffleSampler: every epoch a permutation, blocks kept contiguous and whole, ranks taking
// contiguous runs with equal counts, seeds and epochs deciding the order, argument errors, and
// a Loader fed by it.
#include "test_datasets.h"

#include <mploader/block_sampler.h>
#include <mploader/errors.h>
#include <mploader/loader.h>
#include <mploader/rank_agreement.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <string>
#include <vector>

namespace test_block_sampler {

using mploader::BlockShuffleSampler;

namespace {

bool is_permutation_of_range(std::vector<int64_t> v, size_t n) {
  if (v.size() != n) return false;
  std::sort(v.begin(), v.end());
  for (size_t i = 0; i < n; ++i) {
    if (v[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// The blocks of `order` (a global order over n samples cut in blocks of b) in the order they
// come, checking that each block's samples sit together: the run at each block's start holds
// exactly that block's indices, however short the block is.
std::vector<int64_t> block_sequence(const std::vector<int64_t>& order, int64_t n, int64_t b) {
  std::vector<int64_t> blocks;
  for (int64_t at = 0; at < n;) {
    const int64_t block = order[static_cast<size_t>(at)] / b;
    const int64_t size = std::min(b, n - block * b);
    std::vector<int64_t> run(order.begin() + at, order.begin() + at + size);
    std::sort(run.begin(), run.end());
    std::vector<int64_t> expected(static_cast<size_t>(size));
    std::iota(expected.begin(), expected.end(), block * b);
    INFO("block " << block << " at position " << at);
    REQUIRE(run == expected);
    blocks.push_back(block);
    at += size;
  }
  return blocks;
}

std::string error_of(int64_t block, int64_t world, int64_t rank) {
  try {
    BlockShuffleSampler(block, 0, world, rank);
  } catch (const mploader::OptionError& e) {
    return e.option() + ": " + e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("block sampler: every epoch on one rank is a permutation of the dataset",
          "[block_sampler]") {
  for (int64_t n : {1, 2, 7, 100, 1000, 1003}) {
    for (int64_t b : {1, 3, 10, 64, 1000, 5000}) {
      BlockShuffleSampler s(b, 11);
      for (uint64_t epoch : {0, 1, 7}) {
        INFO("n " << n << " block " << b << " epoch " << epoch);
        const std::vector<int64_t> order = s.indices(static_cast<size_t>(n), epoch);
        CHECK(is_permutation_of_range(order, static_cast<size_t>(n)));
        CHECK(order == s.global_order(static_cast<size_t>(n), epoch));
      }
    }
  }
  CHECK(BlockShuffleSampler(4).indices(0, 0).empty());
}

TEST_CASE("block sampler: each block's samples are contiguous, full blocks at multiples of "
          "block_samples before the short one",
          "[block_sampler]") {
  for (int64_t n : {1000, 1003, 1099, 17}) {
    const int64_t b = 100;
    for (uint64_t epoch = 0; epoch < 5; ++epoch) {
      INFO("n " << n << " epoch " << epoch);
      const std::vector<int64_t> order = BlockShuffleSampler(b, 3).global_order(n, epoch);
      const std::vector<int64_t> blocks = block_sequence(order, n, b);
      // Every block once; the k-th full block before the short last one starts at k x b, and
      // the ones after it are shifted back by what the short block lacks.
      CHECK(std::set<int64_t>(blocks.begin(), blocks.end()).size() == blocks.size());
      CHECK(static_cast<int64_t>(blocks.size()) == (n + b - 1) / b);
      const int64_t last = (n + b - 1) / b - 1;
      const auto short_slot = std::find(blocks.begin(), blocks.end(), last) - blocks.begin();
      for (size_t k = 0; k < blocks.size(); ++k) {
        const int64_t slot = static_cast<int64_t>(k);
        const int64_t start = slot * b - (slot > short_slot ? (last + 1) * b - n : 0);
        CHECK(order[static_cast<size_t>(start)] / b == blocks[k]);
      }
    }
  }
  // Blocks land in a shuffled order, not the stored one.
  const std::vector<int64_t> order = BlockShuffleSampler(10, 5).global_order(1000, 0);
  std::vector<int64_t> blocks = block_sequence(order, 1000, 10);
  CHECK_FALSE(std::is_sorted(blocks.begin(), blocks.end()));
}

TEST_CASE("block sampler: ranks take contiguous runs of the global order with equal counts",
          "[block_sampler]") {
  SECTION("divisible: every index exactly once") {
    const int64_t n = 1200, world = 4;
    std::vector<int64_t> all;
    for (int64_t rank = 0; rank < world; ++rank) {
      BlockShuffleSampler s(64, 9, world, rank);
      const std::vector<int64_t> mine = s.indices(n, 2);
      CHECK(mine.size() == 300);
      CHECK(s.rank_share(n, 2) == 300);
      all.insert(all.end(), mine.begin(), mine.end());
    }
    CHECK(all == BlockShuffleSampler(64, 9).global_order(n, 2));
  }
  SECTION("not divisible: padded from the start of the order, or trimmed with drop_last") {
    for (int64_t world : {3, 7, 50}) {
      const int64_t n = 41;
      const std::vector<int64_t> global = BlockShuffleSampler(8, 9).global_order(n, 1);
      const int64_t per_rank = (n + world - 1) / world;
      for (int64_t rank = 0; rank < world; ++rank) {
        INFO("world " << world << " rank " << rank);
        std::vector<int64_t> expected;
        for (int64_t p = rank * per_rank; p < (rank + 1) * per_rank; ++p) {
          expected.push_back(global[static_cast<size_t>(p % n)]);
        }
        CHECK(BlockShuffleSampler(8, 9, world, rank).indices(n, 1) == expected);
        const std::vector<int64_t> trimmed =
            BlockShuffleSampler(8, 9, world, rank, true).indices(n, 1);
        CHECK(trimmed.size() == static_cast<size_t>(n / world));
        CHECK(std::equal(trimmed.begin(), trimmed.end(),
                         global.begin() + rank * static_cast<int64_t>(trimmed.size())));
      }
    }
  }
}

TEST_CASE("block sampler: the seed and epoch decide the order", "[block_sampler]") {
  const size_t n = 5000;
  BlockShuffleSampler s(100, 42);
  CHECK(s.indices(n, 0) == BlockShuffleSampler(100, 42).indices(n, 0));
  CHECK(s.indices(n, 0) != s.indices(n, 1));
  CHECK(s.indices(n, 1) != s.indices(n, 2));
  CHECK(s.indices(n, 0) != BlockShuffleSampler(100, 43).indices(n, 0));
  // Different epochs order the blocks differently too, not only the samples inside them.
  CHECK(block_sequence(s.indices(n, 0), n, 100) != block_sequence(s.indices(n, 1), n, 100));
}

TEST_CASE("block sampler: block_samples >= the dataset's size is a full shuffle",
          "[block_sampler]") {
  const size_t n = 20000;
  for (int64_t b : {int64_t{20000}, int64_t{1} << 40, int64_t{1}}) {
    INFO("block " << b);
    const std::vector<int64_t> order = BlockShuffleSampler(b, 1).indices(n, 0);
    REQUIRE(is_permutation_of_range(order, n));
    // A uniform shuffle moves a sample n/3 positions on average.
    double moved = 0;
    for (size_t i = 0; i < n; ++i) moved += std::abs(static_cast<double>(order[i]) - i);
    CHECK(moved / n / n == Approx(1.0 / 3).margin(0.02));
  }
}

TEST_CASE("block sampler: with shard sizes each block holds whole shards from a shuffled shard order",
          "[block_sampler]") {
  // 22 shards of 10 samples, one of 7 and one of 13: 240 samples, 8 full blocks of 30.
  std::vector<int64_t> shards(22, 10);
  shards.push_back(7);
  shards.push_back(13);
  const size_t n = 240;
  BlockShuffleSampler sampler(30, 5, 1, 0, false, shards);
  for (uint64_t epoch = 0; epoch < 3; ++epoch) {
    const std::vector<int64_t> order = sampler.indices(n, epoch);
    std::vector<int64_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int64_t> all(n);
    std::iota(all.begin(), all.end(), 0);
    REQUIRE(sorted == all);
    // Each block (30 positions) draws from at most 5 shards: 3 whole ones of 10, or parts
    // of two at its ends with the 7 and a 10 between.
    for (size_t start = 0; start < n; start += 30) {
      std::set<int64_t> touched;
      for (size_t p = start; p < start + 30; ++p) {
        touched.insert(order[p] < 220 ? order[p] / 10 : (order[p] < 227 ? 22 : 23));
      }
      REQUIRE(touched.size() <= 5);
    }
    // The shards are not visited in their own order: the first block is not shards 0-2.
    std::set<int64_t> first;
    for (size_t p = 0; p < 30; ++p) first.insert(std::min<int64_t>(order[p] / 10, 22));
    CHECK(first != std::set<int64_t>{0, 1, 2});
  }
  REQUIRE(sampler.indices(n, 0) != sampler.indices(n, 1));
  REQUIRE_THROWS_WITH(BlockShuffleSampler(30, 5, 1, 0, false, shards).check_fits(237),
                      Catch::Contains("hold 240 samples, but the dataset has 237"));
  REQUIRE_THROWS_WITH(BlockShuffleSampler(30, 5, 1, 0, false, {10, 0, 4}),
                      Catch::Contains("shard 1 has 0 samples"));
}

TEST_CASE("block sampler: bad block size, world size or rank is an OptionError naming it",
          "[block_sampler]") {
  CHECK_THAT(error_of(0, 1, 0),
             Catch::StartsWith("block_samples: mploader: BlockShuffleSampler:") &&
                 Catch::Contains("block_samples is 0") && Catch::Contains("1 or more"));
  CHECK_THAT(error_of(-5, 1, 0), Catch::StartsWith("block_samples:") && Catch::Contains("-5"));
  CHECK_THAT(error_of(8, 0, 0), Catch::StartsWith("world_size:") && Catch::Contains("is 0"));
  CHECK_THAT(error_of(8, 4, 4),
             Catch::StartsWith("rank:") && Catch::Contains("rank 4 is outside [0, 4)"));
  CHECK_THAT(error_of(8, 4, -1), Catch::StartsWith("rank:") && Catch::Contains("-1"));
  CHECK(error_of(8, 4, 3) == "no error");
  try {
    BlockShuffleSampler(8).check_fits(size_t{2000000000});
    FAIL("an epoch of 2e9 indices was accepted");
  } catch (const mploader::OptionError& e) {
    CHECK(e.option() == "sampler");
    CHECK_THAT(e.what(), Catch::Contains("BlockShuffleSampler") && Catch::Contains("2000000000"));
  }
}

TEST_CASE("block sampler: ranks agree on the block size, not on their rank", "[block_sampler]") {
  using mploader::agreement_of;
  const mploader::RankAgreement a = agreement_of(BlockShuffleSampler(64, 5, 4, 1), 100, 2);
  const mploader::RankAgreement b = agreement_of(BlockShuffleSampler(64, 5, 4, 3), 100, 2);
  CHECK(a.fingerprint == b.fingerprint);
  CHECK(a.batches == 25);
  CHECK(a.seed == 5);
  CHECK(a.rank == 1);
  CHECK(a.world_size == 4);
  CHECK(BlockShuffleSampler(32, 5, 4, 1).fingerprint() != a.fingerprint);
  CHECK(BlockShuffleSampler(64, 5, 4, 1, true).fingerprint() != a.fingerprint);
}

TEST_CASE("block sampler: a Loader over it gives each rank its run, in order", "[block_sampler]") {
  const size_t n = 103;
  const int64_t world = 4;
  std::multiset<int64_t> seen;
  for (int64_t rank = 0; rank < world; ++rank) {
    auto sampler = std::make_shared<BlockShuffleSampler>(10, 5, world, rank);
    mploader::LoaderOptions o;
    o.sampler = sampler;
    o.batch_size = 8;
    o.num_workers = rank % 2 == 0 ? 0 : 2;
    o.rank = rank;
    o.world_size = world;
    mploader::Loader loader(std::make_shared<testing_datasets::CountingDataset>(n), o);
    loader.set_epoch(3);
    std::vector<int64_t> labels;
    for (mploader::Batch& b : loader) {
      const at::Tensor label = b["label"];
      for (int64_t i = 0; i < label.size(0); ++i) labels.push_back(label[i].item<int64_t>());
    }
    CHECK(labels == sampler->indices(n, 3));
    CHECK(labels.size() == 26);  // ceil(103 / 4)
    seen.insert(labels.begin(), labels.end());
  }
  CHECK(seen.size() == 104);  // one padded repeat
  for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) CHECK(seen.count(i) >= 1);
}

}  // namespace test_block_sampler
