// The epoch plan of a StreamingDataset (sampler/stream_plan.h), computed for every rank of a
// job as each rank computes it alone: equal steps, every sample once, a shard with one worker
// of one rank, a shuffle buffer that never holds more than its size.
#include "loader/shard_prefetch_plan.h"
#include "sampler/block_shuffle.h"
#include "sampler/stream_plan.h"

#include <mploader/errors.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

namespace test_stream_plan {

using mploader::OptionError;
using mploader::UnevenRanks;
using mploader::detail::block_shuffle;
using mploader::detail::plan_stream_epoch;
using mploader::detail::StreamEpoch;
using mploader::detail::StreamPlanSettings;

namespace {

std::vector<StreamEpoch> plan_all_ranks(const std::vector<int64_t>& sizes, StreamPlanSettings s,
                                        uint64_t epoch) {
  std::vector<StreamEpoch> out;
  for (int64_t r = 0; r < s.world_size; ++r) {
    s.rank = r;
    out.push_back(plan_stream_epoch(sizes, s, epoch));
  }
  return out;
}

// Every batch of a plan, computed.
std::vector<std::vector<int64_t>> batches_of(const StreamEpoch& p) {
  std::vector<std::vector<int64_t>> out;
  for (size_t b = 0; b < p.size(); ++b) out.push_back(p.batch(b));
  return out;
}

// Shard of each global index.
std::vector<size_t> shard_of_index(const std::vector<int64_t>& sizes) {
  std::vector<size_t> out;
  for (size_t s = 0; s < sizes.size(); ++s) out.insert(out.end(), sizes[s], s);
  return out;
}

std::vector<int64_t> uneven_sizes() {
  return {13, 0, 40, 7, 22, 31, 5, 18, 26, 9, 14, 3, 37, 11, 20, 16, 28};
}

}  // namespace

TEST_CASE("stream plan: every rank takes equal steps, and each sample comes once (pad)",
          "[stream]") {
  const auto sizes = uneven_sizes();
  const int64_t total = std::accumulate(sizes.begin(), sizes.end(), int64_t{0});
  StreamPlanSettings s;
  s.batch_size = 5;
  s.world_size = 3;
  s.streams = 4;
  s.shuffle = true;
  s.seed = 11;
  s.shuffle_buffer = 6;
  for (uint64_t epoch = 0; epoch < 3; ++epoch) {
    const auto plans = plan_all_ranks(sizes, s, epoch);
    std::map<int64_t, int> seen;
    for (const StreamEpoch& p : plans) {
      CHECK(p.size() == plans[0].size());
            for (size_t b = 0; b < p.batches_before_evening; ++b) {
        for (int64_t i : p.batch(b)) ++seen[i];
      }
      // A padded batch repeats one of the rank's own.
      for (size_t b = p.batches_before_evening; b < p.size(); ++b) {
        CHECK(p.batch(b) == p.batch(b - p.batches_before_evening));
      }
    }
    CHECK(static_cast<int64_t>(seen.size()) == total);
    for (const auto& [index, count] : seen) CHECK(count == 1);
  }
}

TEST_CASE("stream plan: drop stops every rank at the shortest, nothing comes twice",
          "[stream]") {
  const auto sizes = uneven_sizes();
  StreamPlanSettings s;
  s.batch_size = 4;
  s.world_size = 4;
  s.streams = 2;
  s.uneven = UnevenRanks::kDrop;
  s.shuffle = true;
  const auto plans = plan_all_ranks(sizes, s, 5);
  std::set<int64_t> seen;
  size_t dropped = 0;
  for (const StreamEpoch& p : plans) {
    CHECK(p.size() == plans[0].size());
    CHECK(p.padded_batches == 0);
    dropped += p.dropped_batches;
    for (const auto& batch : batches_of(p)) {
      for (int64_t i : batch) CHECK(seen.insert(i).second);
    }
  }
  size_t fewest = SIZE_MAX;
  for (const StreamEpoch& p : plans) fewest = std::min(fewest, p.batches_before_evening);
  CHECK(plans[0].size() == fewest);
  size_t own = 0;
  for (const StreamEpoch& p : plans) own += p.batches_before_evening;
  CHECK(dropped == own - fewest * plans.size());
}

TEST_CASE("stream plan: workers read runs of the shard sequence, shared only at their borders",
          "[stream]") {
  const auto sizes = uneven_sizes();
  const auto shard_of = shard_of_index(sizes);
  StreamPlanSettings s;
  s.batch_size = 3;
  s.world_size = 2;
  s.streams = 3;
  s.shuffle = true;
  for (uint64_t epoch = 0; epoch < 4; ++epoch) {
    std::map<std::pair<int64_t, int32_t>, std::set<size_t>> shards_of_reader;
    const auto plans = plan_all_ranks(sizes, s, epoch);
    size_t pairs = 0;
    for (int64_t r = 0; r < s.world_size; ++r) {
      const StreamEpoch& p = plans[static_cast<size_t>(r)];
      for (size_t b = 0; b < p.batches_before_evening; ++b) {
        for (int64_t i : p.batch(b)) shards_of_reader[{r, p.stream_of(b)}].insert(shard_of[i]);
      }
    }
    for (const auto& [reader, shards] : shards_of_reader) pairs += shards.size();
    // 16 nonempty shards read by 6 workers: each border between two workers shares one shard.
    CHECK(pairs <= 16 + 6 - 1);
  }
}

TEST_CASE("stream plan: across random layouts, ranks differ by one batch at most before evening",
          "[stream]") {
  uint64_t state = 12345;
  auto draw = [&state](int64_t below) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int64_t>((state >> 33) % static_cast<uint64_t>(below));
  };
  for (int layout = 0, checked = 0; checked < 20; ++layout) {
    std::vector<int64_t> sizes(static_cast<size_t>(1 + draw(40)));
    for (int64_t& n : sizes) n = draw(5) == 0 ? 0 : 1 + draw(300);
    StreamPlanSettings s;
    s.batch_size = 1 + draw(16);
    s.world_size = 1 + draw(8);
    s.streams = 1 + draw(4);
    s.shuffle = draw(2) == 1;
    s.seed = static_cast<uint64_t>(layout);
    s.drop_last = draw(3) == 0;
    const int64_t total = std::accumulate(sizes.begin(), sizes.end(), int64_t{0});
    if (total / s.world_size < s.batch_size) continue;  // some rank would get no batch
    const auto plans = plan_all_ranks(sizes, s, 0);
    size_t fewest = SIZE_MAX, most = 0;
    for (const StreamEpoch& p : plans) {
      fewest = std::min(fewest, p.batches_before_evening);
      most = std::max(most, p.batches_before_evening);
      CHECK(p.fewest_batches == plans[0].fewest_batches);
      CHECK(p.most_batches == plans[0].most_batches);
    }
    INFO("layout " << layout << ": " << sizes.size() << " shards, " << total << " samples, "
                   << s.world_size << " ranks x " << s.streams << " streams, batch "
                   << s.batch_size);
    CHECK(most - fewest <= 1);
    CHECK(plans[0].fewest_batches == fewest);
    CHECK(plans[0].most_batches == most);
    ++checked;
  }
  // Equal shards that divide evenly: no difference at all.
  StreamPlanSettings s;
  s.batch_size = 7;
  s.world_size = 4;
  s.streams = 3;
  s.shuffle = true;
  for (const StreamEpoch& p : plan_all_ranks(std::vector<int64_t>(12, 50), s, 1)) {
    CHECK(p.batches_before_evening == 22);  // 150 samples: 21 full batches and one of 3
    CHECK(p.padded_batches == 0);
  }
}

TEST_CASE("stream plan: the shard order changes with the epoch and is the same every run",
          "[stream]") {
  const auto sizes = uneven_sizes();
  StreamPlanSettings s;
  s.batch_size = 4;
  s.streams = 2;
  s.shuffle = true;
  s.seed = 3;
  CHECK(batches_of(plan_stream_epoch(sizes, s, 1)) == batches_of(plan_stream_epoch(sizes, s, 1)));
  CHECK(batches_of(plan_stream_epoch(sizes, s, 1)) != batches_of(plan_stream_epoch(sizes, s, 2)));
  s.shuffle = false;
  CHECK(batches_of(plan_stream_epoch(sizes, s, 1)) == batches_of(plan_stream_epoch(sizes, s, 2)));
}

TEST_CASE("stream plan: fewer shards than ranks are split into sample ranges", "[stream]") {
  StreamPlanSettings s;
  s.batch_size = 8;
  s.world_size = 4;
  s.streams = 1;
  const auto plans = plan_all_ranks({100}, s, 0);
  std::set<int64_t> seen;
  for (const StreamEpoch& p : plans) {
    CHECK(p.size() == 4);  // 25 samples each: 3 full batches and one of 1
    for (const auto& batch : batches_of(p)) {
      for (int64_t i : batch) CHECK(seen.insert(i).second);
    }
  }
  CHECK(seen.size() == 100);
}

TEST_CASE("stream plan: fewer shards than workers are split so that no worker idles",
          "[stream]") {
  StreamPlanSettings s;
  s.batch_size = 4;
  s.streams = 5;
  const StreamEpoch p = plan_stream_epoch({30, 10}, s, 0);
  REQUIRE(p.streams.size() == 5);
  for (const auto& ranges : p.streams) {
    int64_t n = 0;
    for (const auto& r : ranges) n += r.size();
    CHECK(n == 8);
  }
  std::set<int32_t> used;
  for (size_t b = 0; b < p.size(); ++b) used.insert(p.stream_of(b));
  CHECK(used.size() == 5);
  // The workers' batches alternate: 0, 1, 2, 3, 4, 0, 1, ...
  for (size_t b = 0; b < p.size(); ++b) {
    CHECK(p.stream_of(b) == static_cast<int32_t>(b % 5));
  }
}

TEST_CASE("stream plan: a shuffle block holds at most its size and keeps every sample",
          "[stream]") {
  std::vector<int64_t> in(500);
  std::iota(in.begin(), in.end(), 1000);
  for (int64_t buffer : {2, 7, 64, 1000}) {
    const std::vector<int64_t> out = block_shuffle(in, buffer, 42);
    std::vector<int64_t> sorted = out;
    std::sort(sorted.begin(), sorted.end());
    CHECK(sorted == in);
    CHECK(out != in);
    // Sample out[i] was read at position out[i] - 1000; a reader that has emitted i samples
    // and read up to that one holds (read - i) samples: never more than the buffer.
    int64_t read = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      read = std::max(read, out[i] - 1000 + 1);
      CHECK(read - static_cast<int64_t>(i) <= buffer);
    }
    CHECK(block_shuffle(in, buffer, 42) == out);
    CHECK(block_shuffle(in, buffer, 43) != out);
  }
  CHECK(block_shuffle(in, 1, 42) == in);
  CHECK(block_shuffle(in, 0, 42) == in);
}

TEST_CASE("stream plan: a job without enough data for every rank is refused", "[stream]") {
  StreamPlanSettings s;
  s.world_size = 8;
  CHECK_THROWS_WITH(plan_stream_epoch({3, 2}, s, 0),
                    Catch::Contains("5 samples, fewer than the 8 ranks"));
  s.world_size = 2;
  s.batch_size = 4;
  s.drop_last = true;
  s.streams = 2;
  // 6 samples: 3 per rank, no full batch on either.
  CHECK_THROWS_WITH(plan_stream_epoch({6}, s, 0),
                    Catch::Contains("gets no batch of this epoch") &&
                        Catch::Contains("drop_last"));
  CHECK_THROWS_AS(plan_stream_epoch({6}, s, 0), OptionError);
  // 10: 5 per rank, which whole-batch streams cut into one full batch and one left out.
  CHECK(plan_stream_epoch({10}, s, 0).size() == 1);
}

namespace {

class CountedShards : public mploader::StreamingDataset {
 public:
  explicit CountedShards(const std::vector<int64_t>& sizes) {
    std::vector<mploader::ShardInfo> shards;
    for (size_t i = 0; i < sizes.size(); ++i) shards.push_back({std::to_string(i), sizes[i]});
    declare_shards(std::move(shards));
  }
  mploader::Sample get(int64_t) override { return {}; }
};

}  // namespace

TEST_CASE("stream plan: each batch names the shards its stream reads from then on",
          "[stream]") {
  const std::vector<int64_t> sizes = uneven_sizes();
  const std::vector<size_t> shard_of = shard_of_index(sizes);
  const CountedShards dataset(sizes);
  StreamPlanSettings s;
  s.batch_size = 4;
  s.shuffle = true;
  s.world_size = 2;
  s.streams = 3;
  for (int64_t buffer : {0, 9}) {
    s.shuffle_buffer = buffer;
    const auto shared = std::make_shared<StreamEpoch>(plan_stream_epoch(sizes, s, 1));
    const StreamEpoch& plan = *shared;
    const mploader::detail::ShardPrefetchPlan prefetch(shared, dataset);
    std::vector<int32_t> last_unit(plan.streams.size(), 0);
    for (size_t b = 0; b < plan.batches_before_evening; ++b) {
      const auto k = static_cast<size_t>(plan.stream_of(b));
      const std::vector<mploader::detail::SampleRange>& units = plan.streams[k];
      const int32_t reached = plan.read_unit_of(b);
      INFO("buffer " << buffer << ", batch " << b << ", stream " << k);
      // The reader only moves forward, and has read every sample of the batch.
      CHECK(reached >= last_unit[k]);
      last_unit[k] = reached;
      for (int64_t index : plan.batch(b)) {
        size_t u = 0;
        while (!(units[u].begin <= index && index < units[u].end)) ++u;
        CHECK(static_cast<int32_t>(u) <= reached);
      }
      // Unbuffered, the batch's last sample is in the range reached.
      const int64_t last = plan.batch(b).back();
      if (buffer == 0) CHECK((units[reached].begin <= last && last < units[reached].end));
      // The shards named are that range's, then those of the ranges after it, in order, each
      // once.
      size_t previous = shard_of[static_cast<size_t>(units[reached].begin)];
      std::vector<int64_t> expected = {static_cast<int64_t>(previous)};
      for (size_t u = static_cast<size_t>(reached) + 1; u < units.size(); ++u) {
        const size_t shard = shard_of[static_cast<size_t>(units[u].begin)];
        if (shard != previous && expected.size() < 4) {
          expected.push_back(static_cast<int64_t>(shard));
        }
        previous = shard;
      }
      int64_t got[4];
      const size_t n = prefetch.upcoming_shards(b, got, 4);
      CHECK(std::vector<int64_t>(got, got + n) == expected);
    }
  }
}

}  // namespace test_stream_plan

namespace test_stream_plan {

TEST_CASE("stream plan: the samples of delivered batches are named once each, from the rule",
          "[stream]") {
  using mploader::detail::plan_resumed_stream_epoch;
  using mploader::detail::SampleRange;
  using mploader::detail::SequenceSet;
  uint64_t state = 777;
  auto draw = [&state](int64_t below) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int64_t>((state >> 33) % static_cast<uint64_t>(below));
  };
  int splits = 0, pads = 0;  // layouts that split a batch, and that repeat one
  for (int layout = 0; layout < 60; ++layout) {
    std::vector<int64_t> sizes(static_cast<size_t>(1 + draw(12)));
    for (int64_t& n : sizes) n = 1 + draw(200);
    StreamPlanSettings s;
    s.batch_size = 1 + draw(9);
    s.world_size = 1 + draw(3);
    s.rank = draw(s.world_size);
    s.streams = 1 + draw(4);
    s.shuffle = true;
    s.seed = static_cast<uint64_t>(layout);
    s.shuffle_buffer = draw(3) == 0 ? 0 : 1 + draw(40);
    const int64_t total = std::accumulate(sizes.begin(), sizes.end(), int64_t{0});
    if (total / s.world_size < s.batch_size) continue;
    // A resumed epoch's plan, with a batch split where this rank is one step short.
    std::vector<SampleRange> remaining;
    int64_t start = 0;
    for (int64_t n : sizes) {
      remaining.push_back({start + n / 3, start + n});
      start += n;
    }
    const StreamEpoch p = layout % 2 == 0 ? plan_stream_epoch(sizes, s, 3)
                                          : plan_resumed_stream_epoch(remaining, s, 3);
    // Delivered: a prefix, then some positions past it, repeats included.
    SequenceSet delivered(p.size());
    const uint64_t prefix = static_cast<uint64_t>(draw(static_cast<int64_t>(p.size()) + 1));
    if (prefix > 0) delivered.insert_range(0, prefix);
    for (int extra = 0; extra < 4 && p.size() > 0; ++extra) {
      delivered.insert(static_cast<uint64_t>(draw(static_cast<int64_t>(p.size()))));
    }
    std::set<int64_t> expected;
    const size_t own = p.batches_before_evening + p.split_batches;
    for (size_t b = 0; b < p.size() && b < own; ++b) {
      if (!delivered.contains(b)) continue;
      for (int64_t i : p.batch(b)) CHECK(expected.insert(i).second);
    }
    std::multiset<int64_t> named;
    p.for_each_delivered(delivered, [&](size_t k, int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        named.insert(i);
        // Each run lies in one of stream k's ranges.
        bool inside = false;
        for (const SampleRange& r : p.streams[k]) inside |= r.begin <= i && i < r.end;
        CHECK(inside);
      }
    });
    INFO("layout " << layout << ": batch " << s.batch_size << ", " << s.streams
                   << " streams, block " << s.shuffle_buffer << ", prefix " << prefix);
    CHECK(std::multiset<int64_t>(expected.begin(), expected.end()) == named);
    splits += p.split_batches > 0 ? 1 : 0;
    pads += p.padded_batches > 0 ? 1 : 0;
  }
  CHECK(splits > 0);
  CHECK(pads > 0);
}

}  // namespace test_stream_plan
