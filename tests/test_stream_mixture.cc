// StreamMixture: shares within binomial bounds, each worker reading every source's shards in
// order, the end rules, ranks with equal steps, resume, and the options' errors.
#include <mploader/loader.h>
#include <mploader/stream_mixture.h>

#include "sampler/stream_mix_plan.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <set>

using namespace mploader;
using detail::SampleRange;
using detail::StreamEpoch;
using detail::StreamPlanSettings;

namespace {

// Shards of the given sizes; each sample holds its global index.
class IndexShards : public StreamingDataset {
 public:
  IndexShards(const std::vector<int64_t>& sizes, const std::string& prefix) {
    std::vector<ShardInfo> shards;
    for (size_t s = 0; s < sizes.size(); ++s) {
      shards.push_back({prefix + "-" + std::to_string(s), sizes[s]});
    }
    declare_shards(std::move(shards));
  }
  std::optional<SampleLayout> sample_layout() const override {
    return SampleLayout{{"index", at::kLong, {}}};
  }
  void write(int64_t index, SampleWriter& out) override { *out.data<int64_t>(0) = index; }
};

std::shared_ptr<StreamMixture> three_corpora(MixtureEnd end, int64_t num_samples) {
  std::vector<std::shared_ptr<StreamingDataset>> sources{
      std::make_shared<IndexShards>(std::vector<int64_t>(20, 500), "web"),
      std::make_shared<IndexShards>(std::vector<int64_t>(12, 400), "books"),
      std::make_shared<IndexShards>(std::vector<int64_t>(9, 300), "code")};
  StreamMixtureOptions o;
  o.weights = {0.5, 0.3, 0.2};
  o.end = end;
  o.num_samples = num_samples;
  return std::make_shared<StreamMixture>(std::move(sources), o);
}

std::vector<int64_t> shard_sizes(const StreamingDataset& data) {
  std::vector<int64_t> out;
  for (const ShardInfo& s : data.shards()) out.push_back(s.num_samples);
  return out;
}

StreamPlanSettings settings(int64_t world, int64_t rank, int64_t streams) {
  StreamPlanSettings s;
  s.batch_size = 32;
  s.shuffle = true;
  s.seed = 5;
  s.world_size = world;
  s.rank = rank;
  s.streams = streams;
  return s;
}

StreamEpoch plan_of(const StreamMixture& mix, const StreamPlanSettings& s, uint64_t epoch) {
  const detail::SourceRanges sources =
      detail::mixture_sources(shard_sizes(mix), *mix.stream_mix(), s, epoch);
  return detail::plan_mixed_stream_epoch(sources, *mix.stream_mix(), s, epoch, false);
}

// Each rank's own batches (before padding), all ranks together.
std::vector<int64_t> job_samples(const StreamMixture& mix, int64_t world, int64_t streams) {
  std::vector<int64_t> out;
  for (int64_t r = 0; r < world; ++r) {
    const StreamEpoch plan = plan_of(mix, settings(world, r, streams), 0);
    for (size_t b = 0; b < plan.batches_before_evening; ++b) {
      out.insert(out.end(), plan.batches[b].begin(), plan.batches[b].end());
    }
  }
  return out;
}

}  // namespace

TEST_CASE("stream mixture: shares within 5 sd over an epoch of 3 corpora") {
  const auto mix = three_corpora(MixtureEnd::kCycle, 30000);
  const std::vector<int64_t> samples = job_samples(*mix, 2, 3);
  CHECK(samples.size() == 30000);
  std::vector<double> count(3);
  for (int64_t i : samples) count[mix->source_of(i)] += 1;
  const std::vector<double> p{0.5, 0.3, 0.2};
  for (size_t k = 0; k < 3; ++k) {
    const double n = static_cast<double>(samples.size());
    const double sd = std::sqrt(n * p[k] * (1 - p[k]));
    INFO("source " << k << ": " << count[k] << " of " << n);
    CHECK(std::abs(count[k] - n * p[k]) <= 5 * sd);
  }
}

TEST_CASE("stream mixture: each worker reads every source's shards front to back") {
  const auto mix = three_corpora(MixtureEnd::kFirstExhausted, 0);
  const StreamEpoch plan = plan_of(*mix, settings(2, 1, 2), 0);
  // shuffle_buffer 0: the batches hold each stream's reads in order.
  std::map<std::pair<int32_t, size_t>, int64_t> last;  // (stream, source) -> last index read
  std::set<size_t> sources_read;
  for (size_t b = 0; b < plan.batches_before_evening; ++b) {
    for (int64_t i : plan.batches[b]) {
      const size_t source = mix->source_of(i);
      sources_read.insert(source);
      auto [it, fresh] = last.try_emplace({plan.stream_of_batch[b], source}, i);
      if (!fresh) {
        // The next sample of the same shard, or the first of another.
        const bool next_in_shard = i == it->second + 1 &&
                                   mix->locate(i).shard == mix->locate(it->second).shard;
        CHECK((next_in_shard || mix->locate(i).sample == 0 ||
               mix->locate(i).shard != mix->locate(it->second).shard));
        it->second = i;
      }
    }
  }
  CHECK(sources_read.size() == 3);
}

TEST_CASE("stream mixture: first_exhausted repeats nothing, ranks take equal steps") {
  const auto mix = three_corpora(MixtureEnd::kFirstExhausted, 0);
  const std::vector<int64_t> samples = job_samples(*mix, 3, 2);
  CHECK(std::set<int64_t>(samples.begin(), samples.end()).size() == samples.size());
  size_t steps = 0;
  for (int64_t r = 0; r < 3; ++r) {
    const StreamEpoch plan = plan_of(*mix, settings(3, r, 2), 0);
    if (r == 0) steps = plan.batches.size();
    CHECK(plan.batches.size() == steps);
  }
}

TEST_CASE("stream mixture: all_exhausted reads every sample at least once") {
  const auto mix = three_corpora(MixtureEnd::kAllExhausted, 0);
  const std::vector<int64_t> samples = job_samples(*mix, 2, 2);
  CHECK(std::set<int64_t>(samples.begin(), samples.end()).size() == mix->size());
}

TEST_CASE("stream mixture: the rest after a job state comes once, on another world size") {
  const auto mix = three_corpora(MixtureEnd::kFirstExhausted, 0);
  // 4 ranks delivered their first 20 batches; the rest on 3 ranks.
  detail::SequenceSet delivered;
  delivered.assign(mix->size());
  std::vector<int64_t> before;
  for (int64_t r = 0; r < 4; ++r) {
    const StreamEpoch plan = plan_of(*mix, settings(4, r, 2), 0);
    for (size_t b = 0; b < 20; ++b) {
      for (int64_t i : plan.batches[b]) {
        delivered.insert(static_cast<uint64_t>(i));
        before.push_back(i);
      }
    }
  }
  std::vector<int64_t> after;
  size_t steps = 0;
  for (int64_t r = 0; r < 3; ++r) {
    const StreamPlanSettings s = settings(3, r, 2);
    const detail::SourceRanges rest = detail::remaining_of_sources(
        detail::mixture_sources(shard_sizes(*mix), *mix->stream_mix(), s, 0), delivered);
    const StreamEpoch plan = detail::plan_mixed_stream_epoch(rest, *mix->stream_mix(), s, 0, true);
    if (r == 0) steps = plan.batches.size();
    CHECK(plan.batches.size() == steps);
    for (const auto& batch : plan.batches) after.insert(after.end(), batch.begin(), batch.end());
  }
  std::set<int64_t> all(before.begin(), before.end());
  for (int64_t i : after) CHECK(all.insert(i).second);  // nothing twice
  CHECK(!after.empty());
}

TEST_CASE("stream mixture: a Loader delivers the plan from 2 workers, every sample once") {
  const auto mix = three_corpora(MixtureEnd::kFirstExhausted, 0);
  LoaderOptions o;
  o.batch_size = 32;
  o.num_workers = 2;
  o.shuffle = true;
  o.shuffle_buffer = 64;
  o.seed = 3;
  Loader loader(mix, o);
  std::set<int64_t> seen;
  std::vector<double> count(3);
  for (const Batch& batch : loader) {
    const at::Tensor index = batch["index"];
    for (int64_t j = 0; j < index.size(0); ++j) {
      const int64_t i = index[j].item<int64_t>();
      CHECK(seen.insert(i).second);
      count[mix->source_of(i)] += 1;
    }
  }
  REQUIRE(!seen.empty());
  const double n = static_cast<double>(seen.size());
  CHECK(std::abs(count[0] / n - 0.5) < 0.05);
}

TEST_CASE("stream mixture: bad options name the option and the fix") {
  std::vector<std::shared_ptr<StreamingDataset>> sources{
      std::make_shared<IndexShards>(std::vector<int64_t>{10}, "a"),
      std::make_shared<IndexShards>(std::vector<int64_t>{0}, "b")};
  StreamMixtureOptions o;
  o.weights = {1.0};
  CHECK_THROWS_WITH(StreamMixture(sources, o),
                    Catch::Contains("StreamMixture has 1 weights for 2 sources"));
  o.weights = {1.0, 1.0};
  CHECK_THROWS_WITH(StreamMixture(sources, o), Catch::Contains("source 1 has weight 1"));
  o.weights = {1.0, -1.0};
  CHECK_THROWS_AS(StreamMixture(sources, o), OptionError);
  CHECK_THROWS_WITH(StreamMixture({}, o), Catch::Contains("at least one source"));
}
