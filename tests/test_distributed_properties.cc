// Properties of DistributedBucketSampler over random length distributions (uniform, long-tailed,
// bimodal, constant, with zeros), world sizes 1 to 64, several epochs, pad and drop, balance on
// and off: every rank has the same number of batches; padded epochs cover every sample, with
// repeats only as reported; dropped epochs cover every sample at most once, missing exactly the
// reported ones; every batch keeps both budgets and its lengths within bucket_ratio; plans are deterministic; a sampler resumed from
// a state gives exactly the rest of the epoch; balancing never makes the steps slower.
#include <mploader/bucket_sampler.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>

namespace test_distributed_properties {

using mploader::BucketOptions;
using mploader::DistributedBucketSampler;
using Batches = std::vector<std::vector<int64_t>>;

namespace {

std::vector<int64_t> random_lengths(std::mt19937_64& rng, size_t n, int kind) {
  std::vector<int64_t> lengths(n);
  std::lognormal_distribution<double> tail(3.5, 1.0);
  for (size_t i = 0; i < n; ++i) {
    switch (kind) {
      case 0: lengths[i] = 1 + static_cast<int64_t>(rng() % 512); break;
      case 1: lengths[i] = std::min<int64_t>(1 + static_cast<int64_t>(tail(rng)), 2000); break;
      case 2: lengths[i] = rng() % 2 ? 8 + static_cast<int64_t>(rng() % 8) : 900; break;
      case 3: lengths[i] = 64; break;
      default: lengths[i] = static_cast<int64_t>(rng() % 6); break;  // zeros among them
    }
  }
  return lengths;
}

int64_t cost(const std::vector<int64_t>& batch, const std::vector<int64_t>& lengths) {
  int64_t longest = 1;
  for (int64_t i : batch) longest = std::max(longest, lengths[i]);
  return static_cast<int64_t>(batch.size()) * longest;
}

struct Case {
  std::vector<int64_t> lengths;
  BucketOptions options;
  int64_t world = 1;
};

Case random_case(std::mt19937_64& rng, int round) {
  Case c;
  const size_t n = round % 7 == 0 ? rng() % 40 : rng() % 3000;
  c.lengths = random_lengths(rng, n, round % 5);
  const int64_t worlds[] = {1, 2, 3, 5, 8, 13, 16, 31, 64};
  c.world = round % 3 == 0 ? 1 + static_cast<int64_t>(rng() % 64) : worlds[rng() % 9];
  BucketOptions& o = c.options;
  o.max_tokens = rng() % 4 == 0 ? 0 : 2000 + static_cast<int64_t>(rng() % 6000);
  o.max_batch_size = o.max_tokens == 0 || rng() % 2 ? 1 + static_cast<int64_t>(rng() % 96) : 0;
  o.bucket_ratio = 1.0 + static_cast<double>(rng() % 40) / 100;
  o.shuffle = round % 11 != 0;
  o.seed = rng();
  o.uneven = rng() % 2 ? BucketOptions::Uneven::kPad : BucketOptions::Uneven::kDrop;
  o.balance_ranks = rng() % 4 != 0;
  o.costliest_first = rng() % 3 == 0;
  return c;
}

std::vector<Batches> all_ranks(const Case& c, uint64_t epoch) {
  std::vector<Batches> out;
  for (int64_t r = 0; r < c.world; ++r) {
    out.push_back(DistributedBucketSampler(c.lengths, c.options, c.world, r)
                      .batches(c.lengths.size(), epoch));
  }
  return out;
}

void check_coverage(const Case& c, const std::vector<Batches>& ranks,
                    const mploader::BucketEpochStats& st) {
  std::vector<int64_t> count(c.lengths.size(), 0);
  size_t total = 0;
  for (const Batches& batches : ranks) {
    for (const auto& b : batches) {
      for (int64_t i : b) ++count[i];
      total += b.size();
    }
  }
  if (c.options.uneven == BucketOptions::Uneven::kPad) {
    CHECK(st.dropped_batches == 0);
    CHECK(total == c.lengths.size() + st.padded_samples);
    CHECK(std::count(count.begin(), count.end(), 0) == 0);
    if (st.padded_batches == 0) CHECK(std::count(count.begin(), count.end(), 1) == count.size());
  } else {
    CHECK(st.padded_batches == 0);
    CHECK(total == c.lengths.size() - st.dropped_samples);
    CHECK(*std::max_element(count.begin(), count.end()) <= 1);
    CHECK(st.dropped_batches < static_cast<size_t>(c.world));
  }
}

void check_budgets(const Case& c, const std::vector<Batches>& ranks, size_t bound) {
  for (const Batches& batches : ranks) {
    for (const auto& b : batches) {
      REQUIRE(!b.empty());
      CHECK(b.size() <= bound);
      if (c.options.max_batch_size > 0) CHECK(b.size() <= size_t(c.options.max_batch_size));
      if (c.options.max_tokens > 0) CHECK(cost(b, c.lengths) <= c.options.max_tokens);
      int64_t shortest = INT64_MAX, longest = 1;
      for (int64_t i : b) {
        shortest = std::min(shortest, std::max<int64_t>(c.lengths[i], 1));
        longest = std::max(longest, c.lengths[i]);
      }
      CHECK(static_cast<double>(longest) <= static_cast<double>(shortest) * c.options.bucket_ratio);
    }
  }
}

// Sum over steps of the costliest batch: the time a step-synchronous job waits.
int64_t step_time(const Case& c, const std::vector<Batches>& ranks) {
  int64_t sum = 0;
  for (size_t s = 0; s < ranks[0].size(); ++s) {
    int64_t slowest = 0;
    for (const Batches& r : ranks) slowest = std::max(slowest, cost(r[s], c.lengths));
    sum += slowest;
  }
  return sum;
}

}  // namespace

TEST_CASE("bucket properties: equal counts, coverage, budgets, determinism, balance",
          "[distributed][bucket][property]") {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 120; ++round) {
    const Case c = random_case(rng, round);
    INFO("round " << round << ": n=" << c.lengths.size() << " world=" << c.world
                  << " max_tokens=" << c.options.max_tokens
                  << " max_batch_size=" << c.options.max_batch_size
                  << " drop=" << (c.options.uneven == BucketOptions::Uneven::kDrop)
                  << " balance=" << c.options.balance_ranks);
    DistributedBucketSampler probe(c.lengths, c.options, c.world, 0);
    for (uint64_t epoch = 0; epoch < 3; ++epoch) {
      const mploader::BucketEpochStats st = probe.stats(epoch);
      const std::vector<Batches> ranks = all_ranks(c, epoch);
      for (const Batches& r : ranks) REQUIRE(r.size() == st.batches_per_rank);
      check_coverage(c, ranks, st);
      check_budgets(c, ranks, probe.max_batch_size());
      CHECK(all_ranks(c, epoch) == ranks);  // fresh samplers, same plan
      if (c.options.balance_ranks && c.world > 1) {
        Case unbalanced = c;
        unbalanced.options.balance_ranks = false;
        CHECK(step_time(c, ranks) <= step_time(unbalanced, all_ranks(unbalanced, epoch)));
      }
      if (epoch == 1 && c.options.shuffle && st.batches >= 8 && st.batches_per_rank > 0) {
        CHECK(all_ranks(c, 0) != ranks);  // another epoch, another order
      }
    }
  }
}

TEST_CASE("bucket properties: resumed equals uninterrupted on every rank",
          "[distributed][bucket][property]") {
  std::mt19937_64 rng(99);
  for (int round = 0; round < 60; ++round) {
    const Case c = random_case(rng, round);
    const uint64_t epoch = rng() % 4;
    const std::vector<Batches> whole = all_ranks(c, epoch);
    const uint64_t steps = whole[0].size();
    const uint64_t consumed = steps == 0 ? 0 : rng() % (steps + 1);
    INFO("round " << round << ": world=" << c.world << " steps=" << steps
                  << " consumed=" << consumed);
    // The state saved by one rank, through JSON, resumes every rank.
    const std::string saved = DistributedBucketSampler(c.lengths, c.options, c.world, 0)
                                  .state_dict(epoch, consumed)
                                  .to_json();
    for (int64_t r = 0; r < c.world; ++r) {
      BucketOptions other_seed = c.options;
      other_seed.seed ^= 0x5555;  // the state's seed wins
      DistributedBucketSampler resumed(c.lengths, other_seed, c.world, r);
      resumed.load_state_dict(mploader::BucketSamplerState::from_json(saved));
      CHECK(resumed.batches(c.lengths.size(), epoch) ==
            Batches(whole[r].begin() + static_cast<int64_t>(consumed), whole[r].end()));
    }
  }
}

}  // namespace test_distributed_properties
