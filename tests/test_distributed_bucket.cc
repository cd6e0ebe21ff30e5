// BucketBatchSampler and DistributedBucketSampler on small hand-worked cases: greedy batches
// under the token budget, padding and dropping across ranks, balancing, errors that name the
// sample and the budget, state round trips, and a Loader (worker processes, pad_collate)
// resumed mid-epoch from a saved state.
#include "error_text.h"

#include <mploader/bucket_sampler.h>
#include <mploader/errors.h>
#include <mploader/loader.h>

#include <ATen/ATen.h>
#include <catch2/catch.hpp>

#include <numeric>
#include <set>

namespace test_distributed_bucket {

using mploader::BucketBatchSampler;
using mploader::BucketOptions;
using mploader::BucketSamplerState;
using mploader::DistributedBucketSampler;
using Batches = std::vector<std::vector<int64_t>>;

using testing_errors::option_error;

namespace {

// With bucket_ratio 2 the buckets are lengths {0, 1}, {2, 3}, {4..7}; without shuffle, samples
// in index order inside each: 1,6 | 2,3,5 | 0,4,7 (lengths 1,1 | 3,3,2 | 5,6,4). With
// max_tokens 12 the greedy cut is [1,6] (the 3 would be over twice the shortest),
// [2,3,5] (3 x 3 = 9; one more of 5 would be 20), [0,4] (2 x 6 = 12), [7] (alone).
const std::vector<int64_t> kLengths = {5, 1, 3, 3, 6, 2, 1, 4};
const std::vector<int64_t> kB0{1, 6}, kB1{2, 3, 5}, kB2{0, 4}, kB3{7};  // costs 2, 9, 12, 4

BucketOptions plain(int64_t max_tokens) {
  BucketOptions o;
  o.max_tokens = max_tokens;
  o.bucket_ratio = 2.0;
  o.shuffle = false;
  return o;
}

// "tokens": int64 [length] filled with the index; "label": the index.
class TokenDataset : public mploader::Dataset {
 public:
  explicit TokenDataset(std::vector<int64_t> lengths) : lengths_(std::move(lengths)) {}
  size_t size() const override { return lengths_.size(); }
  mploader::Sample get(int64_t index) override {
    return {{"tokens", at::full({lengths_[index]}, index, at::kLong)},
            {"label", at::scalar_tensor(index, at::kLong)}};
  }

 private:
  std::vector<int64_t> lengths_;
};

}  // namespace

TEST_CASE("bucket sampler: greedy batches of bucketed lengths under the token budget",
          "[distributed][bucket]") {
  BucketBatchSampler s(kLengths, plain(12));
  CHECK(s.batches(8, 0) == Batches{kB0, kB1, kB2, kB3});
  CHECK(s.max_batch_size() == 8);  // 12 tokens of length-1 samples, capped by the 8 samples
  const mploader::BucketEpochStats st = s.stats(0);
  CHECK(st.batches == 4);
  CHECK(st.batches_per_rank == 4);
  CHECK(st.tokens == 25);
  CHECK(st.padded_tokens == 27);
  CHECK(st.rank_samples == 8);
  BucketOptions sized = plain(0);
  sized.max_batch_size = 3;
  CHECK(BucketBatchSampler(kLengths, sized).batches(8, 0) == Batches{kB0, kB1, {0, 4, 7}});
  BucketOptions equal = plain(0);
  equal.max_batch_size = 8;
  equal.bucket_ratio = 1.0;  // only equal lengths together
  CHECK(BucketBatchSampler(kLengths, equal).batches(8, 0) ==
        Batches{{1, 6}, {5}, {2, 3}, {7}, {0}, {4}});
}

TEST_CASE("bucket sampler: three ranks pad with repeats or drop, and balance by cost",
          "[distributed][bucket]") {
  // Padded: b0 b1 b2 b3 + repeats of b0 b1; sorted by cost 12, 9, 9, 4, 2, 2 they make step 0
  // {b2, b1, b1} and step 1 {b3, b0, b0}.
  std::vector<Batches> ranks;
  for (int64_t r = 0; r < 3; ++r) {
    ranks.push_back(DistributedBucketSampler(kLengths, plain(12), 3, r).batches(8, 0));
  }
  CHECK(ranks[0] == Batches{kB2, kB3});
  CHECK(ranks[1] == Batches{kB1, kB0});
  CHECK(ranks[2] == Batches{kB1, kB0});
  DistributedBucketSampler r2(kLengths, plain(12), 3, 2);
  CHECK(r2.stats(0).padded_batches == 2);
  CHECK(r2.stats(0).padded_samples == 5);
  CHECK(r2.stats(0).rank_samples == 5);

  BucketOptions unbalanced = plain(12);
  unbalanced.balance_ranks = false;  // dealt in order: step 0 = b0 b1 b2, step 1 = b3 b0 b1
  CHECK(DistributedBucketSampler(kLengths, unbalanced, 3, 0).batches(8, 0) == Batches{kB0, kB3});
  CHECK(DistributedBucketSampler(kLengths, unbalanced, 3, 2).batches(8, 0) == Batches{kB2, kB1});

  BucketOptions drop = plain(12);
  drop.uneven = BucketOptions::Uneven::kDrop;  // b3 goes; b2, b1, b0 by cost
  CHECK(DistributedBucketSampler(kLengths, drop, 3, 0).batches(8, 0) == Batches{kB2});
  CHECK(DistributedBucketSampler(kLengths, drop, 3, 2).batches(8, 0) == Batches{kB0});
  DistributedBucketSampler d1(kLengths, drop, 3, 1);
  CHECK(d1.batches(8, 0) == Batches{kB1});
  CHECK(d1.stats(0).dropped_batches == 1);
  CHECK(d1.stats(0).dropped_samples == 1);

  // More ranks than batches: every rank still gets one (repeats), or none when dropping.
  for (int64_t rank = 0; rank < 5; ++rank) {
    CHECK(DistributedBucketSampler(kLengths, plain(12), 5, rank).batches(8, 0).size() == 1);
    CHECK(DistributedBucketSampler(kLengths, drop, 5, rank).batches(8, 0).empty());
  }
  // A Loader over such an empty share ends the epoch at once, with workers or without.
  for (int64_t workers : {0, 1}) {
    mploader::LoaderOptions o;
    o.batch_sampler = std::make_shared<DistributedBucketSampler>(kLengths, drop, 5, 4);
    o.collate = mploader::pad_collate();
    o.num_workers = workers;
    o.max_batch_bytes = 1 << 16;
    mploader::Loader loader(std::make_shared<TokenDataset>(kLengths), o);
    CHECK(loader.batches_per_epoch() == 0);
    CHECK_FALSE(loader.next().has_value());
  }
}

TEST_CASE("bucket sampler: costliest step first", "[distributed][bucket]") {
  std::vector<int64_t> lengths(500);
  for (size_t i = 0; i < lengths.size(); ++i) lengths[i] = 1 + static_cast<int64_t>(i * 7 % 97);
  BucketOptions o;
  o.max_batch_size = 16;  // cost grows with the longest sample, up to 16 x 97
  o.seed = 3;
  o.costliest_first = true;
  for (int64_t world : {1, 3}) {
    int64_t first_max = 0;
    for (int64_t rank = 0; rank < world; ++rank) {
      const Batches b = DistributedBucketSampler(lengths, o, world, rank).batches(500, 4);
      int64_t longest = 0;
      for (int64_t i : b.front()) longest = std::max(longest, lengths[i]);
      first_max = std::max(first_max, static_cast<int64_t>(b.front().size()) * longest);
    }
    CHECK(first_max == 16 * 97);
  }
}

TEST_CASE("bucket sampler: wrong options and over-budget samples are clear errors",
          "[distributed][bucket]") {
  CHECK_THAT(option_error([] { BucketBatchSampler({3, 50, 2}, plain(40)); }),
             Catch::StartsWith("lengths:") &&
                 Catch::Contains("sample 1 has length 50, more than max_tokens = 40"));
  CHECK_THAT(option_error([] { BucketBatchSampler({3, -1}, plain(40)); }),
             Catch::StartsWith("lengths:") && Catch::Contains("sample 1 has length -1"));
  CHECK_THAT(option_error([] { BucketBatchSampler({3}, plain(0)); }),
             Catch::StartsWith("max_tokens:") && Catch::Contains("neither"));
  BucketOptions ratio = plain(10);
  ratio.bucket_ratio = 0.5;
  CHECK_THAT(option_error([&] { BucketBatchSampler({3}, ratio); }),
             Catch::StartsWith("bucket_ratio:") && Catch::Contains("0.5"));
  ratio.bucket_ratio = 1.0 + 1e-9;
  ratio.max_tokens = 0;
  ratio.max_batch_size = 4;
  CHECK_THAT(option_error([&] { BucketBatchSampler({3, 100000000}, ratio); }),
             Catch::StartsWith("bucket_ratio:") &&
                 Catch::Contains("samples up to 100000000 long need more than"));
  ratio.bucket_ratio = 1.0;  // one bucket per distinct length: no bound list to build
  CHECK(BucketBatchSampler({int64_t{1} << 39, 2, int64_t{1} << 39}, ratio).batches(3, 0) ==
        Batches{{1}, {0, 2}});
  CHECK(BucketBatchSampler({}, plain(10)).batches(0, 0).empty());
  CHECK(BucketBatchSampler({0, 0, 0}, plain(2)).batches(3, 0) == Batches{{0, 1}, {2}});
  CHECK_THAT(option_error([] { DistributedBucketSampler({3}, plain(10), 4, 4); }),
             Catch::StartsWith("rank:") && Catch::Contains("rank 4 is outside [0, 4)"));
  CHECK_THAT(option_error([] { DistributedBucketSampler({3}, plain(10), 0, 0); }),
             Catch::StartsWith("world_size:"));
  BucketBatchSampler s(kLengths, plain(12));
  CHECK_THAT(option_error([&] { s.batches(9, 0); }),
             Catch::StartsWith("dataset_size:") &&
                 Catch::Contains("lengths for 8 samples but the dataset has 9"));
  // A length function is read once per sample, here.
  int calls = 0;
  BucketBatchSampler from_function(
      8, [&](int64_t i) { ++calls; return kLengths[i]; }, plain(12));
  CHECK(calls == 8);
  CHECK(from_function.batches(8, 0) == s.batches(8, 0));
}

TEST_CASE("bucket sampler: state round-trips through JSON and refuses other setups",
          "[distributed][bucket]") {
  BucketOptions o = plain(12);
  o.shuffle = true;
  o.seed = 77;
  DistributedBucketSampler s(kLengths, o, 2, 1);
  const BucketSamplerState state = s.state_dict(5, 1);
  const BucketSamplerState back = BucketSamplerState::from_json(state.to_json());
  CHECK(back.epoch == 5);
  CHECK(back.seed == 77);
  CHECK(back.batches_consumed == 1);
  CHECK(back.world_size == 2);
  CHECK(back.fingerprint == s.fingerprint());

  DistributedBucketSampler resumed(kLengths, plain(12), 2, 1);  // seed 0, no shuffle...
  CHECK_THAT(option_error([&] { resumed.load_state_dict(back); }),
             Catch::StartsWith("state:") && Catch::Contains("other sample lengths or batching"));
  DistributedBucketSampler other_world(kLengths, o, 3, 1);
  CHECK_THAT(option_error([&] { other_world.load_state_dict(back); }),
             Catch::StartsWith("state:") && Catch::Contains("world size 2 and this one has 3"));
  DistributedBucketSampler same(kLengths, o, 2, 1);
  BucketSamplerState too_far = back;
  too_far.batches_consumed = 3;
  CHECK_THAT(option_error([&] { same.load_state_dict(too_far); }),
             Catch::Contains("3 batches of epoch 5 were consumed") &&
                 Catch::Contains("only 2 in that epoch"));
  same.load_state_dict(back);
  const Batches full = s.batches(8, 5);
  CHECK(same.batches(8, 5) == Batches(full.begin() + 1, full.end()));
  CHECK(same.batches(8, 6) == s.batches(8, 6));  // other epochs are whole

  CHECK_THAT(option_error([] { BucketSamplerState::from_json("{\"epoch\":1}"); }),
             Catch::StartsWith("state:") && Catch::Contains("no \"seed\""));
  CHECK_THAT(option_error([] { BucketSamplerState::from_json("[1,2]"); }),
             Catch::Contains("not a JSON object"));
  CHECK_THAT(option_error([] {
               BucketSamplerState::from_json(R"({"epoch":-1,"seed":0,"batches_consumed":0,)"
                                             R"("world_size":1,"fingerprint":"0x1"})");
             }),
             Catch::Contains("\"epoch\" is -1"));
}

TEST_CASE("bucket sampler: a Loader resumed from a saved state gives the rest of the epoch",
          "[distributed][bucket]") {
  std::vector<int64_t> lengths(300);
  for (size_t i = 0; i < lengths.size(); ++i) lengths[i] = 1 + static_cast<int64_t>(i * 37 % 61);
  auto data = std::make_shared<TokenDataset>(lengths);
  BucketOptions bo;
  bo.max_tokens = 256;
  bo.seed = 11;
  auto run = [&](const std::optional<std::string>& state_json, int64_t stop_after,
                 std::string* saved) {
    auto sampler = std::make_shared<DistributedBucketSampler>(lengths, bo, 2, 1);
    if (state_json) sampler->load_state_dict(BucketSamplerState::from_json(*state_json));
    mploader::LoaderOptions o;
    o.batch_sampler = sampler;
    o.collate = mploader::pad_collate();
    o.num_workers = 2;
    mploader::Loader loader(data, o);
    loader.set_epoch(2);
    Batches seen;
    for (mploader::Batch& b : loader) {
      const at::Tensor tokens = b["tokens"];
      CHECK(tokens.size(0) * tokens.size(1) <= 256);
      CHECK(at::equal(tokens.select(1, 0), b["label"]));  // row i holds sample indices()[i]
      seen.push_back(b.indices());
      if (static_cast<int64_t>(seen.size()) == stop_after) {
        *saved = sampler->state_after(b).to_json();
        break;
      }
    }
    return seen;
  };
  std::string saved;
  const Batches whole = run(std::nullopt, -1, &saved);
  REQUIRE(whole.size() > 6);
  const Batches first = run(std::nullopt, 4, &saved);
  CHECK(first == Batches(whole.begin(), whole.begin() + 4));
  CHECK(BucketSamplerState::from_json(saved).batches_consumed == 4);
  std::string saved_again;
  const Batches next = run(saved, 2, &saved_again);
  CHECK(next == Batches(whole.begin() + 4, whole.begin() + 6));
  CHECK(BucketSamplerState::from_json(saved_again).batches_consumed == 6);
  const Batches rest = run(saved_again, -1, &saved);
  CHECK(rest == Batches(whole.begin() + 6, whole.end()));
}

}  // namespace test_distributed_bucket
