// StreamMixture: shares within binomial bounds, each worker reading every source's shards in
// order, the end rules, ranks with equal steps, resume, and the options' errors.
#include <mploader/loader.h>
#include <mploader/registry.h>
#include <mploader/stream_mixture.h>

#include "crash_test_support.h"
#include "elastic_harness.h"
#include "sampler/stream_mix_plan.h"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

namespace test_stream_mixture {

using namespace mploader;
using mploader::detail::SampleRange;
using mploader::detail::StreamEpoch;
using mploader::detail::StreamPlanSettings;
using mploader::detail::SourceRanges;
using mploader::detail::mixture_sources;
using mploader::detail::plan_mixed_stream_epoch;
using mploader::detail::remaining_of_sources;
using mploader::detail::SequenceSet;

namespace {

// Shards of the given sizes; each sample holds its index plus `base` (the source's first index
// in the mixture, so that the value read is the mixture's global index).
class IndexShards : public StreamingDataset {
 public:
  IndexShards(const std::vector<int64_t>& sizes, const std::string& prefix, int64_t base = 0)
      : sizes_(sizes), prefix_(prefix), base_(base) {
    std::vector<ShardInfo> shards;
    for (size_t s = 0; s < sizes.size(); ++s) {
      shards.push_back({prefix + "-" + std::to_string(s), sizes[s]});
    }
    declare_shards(std::move(shards));
  }
  std::optional<SampleLayout> sample_layout() const override {
    return SampleLayout{{"index", at::kLong, {}}};
  }
  void write(int64_t index, SampleWriter& out) override {
    *out.data<int64_t>(0) = base_ + index;
  }
  // "prefix base size...", rebuilt by the factory registered below.
  std::optional<DatasetRecipe> recipe() const override {
    std::string text = prefix_ + " " + std::to_string(base_);
    for (int64_t n : sizes_) text += " " + std::to_string(n);
    return DatasetRecipe{"mixture-index-shards", text};
  }

 private:
  std::vector<int64_t> sizes_;
  std::string prefix_;
  int64_t base_;
};

MPLOADER_REGISTER_DATASET("mixture-index-shards", [](const std::string& config) {
  std::istringstream in(config);
  std::string prefix;
  int64_t base = 0;
  in >> prefix >> base;
  std::vector<int64_t> sizes;
  for (int64_t n = 0; in >> n;) sizes.push_back(n);
  return std::make_shared<IndexShards>(sizes, prefix, base);
});

std::shared_ptr<StreamMixture> three_corpora(MixtureEnd end, int64_t num_samples,
                                             const std::string& source_field = "") {
  std::vector<std::shared_ptr<StreamingDataset>> sources{
      std::make_shared<IndexShards>(std::vector<int64_t>(20, 500), "web"),
      std::make_shared<IndexShards>(std::vector<int64_t>(12, 400), "books", 10000),
      std::make_shared<IndexShards>(std::vector<int64_t>(9, 300), "code", 14800)};
  StreamMixtureOptions o;
  o.weights = {0.5, 0.3, 0.2};
  o.end = end;
  o.num_samples = num_samples;
  o.source_field = source_field;
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
  const SourceRanges sources =
      mixture_sources(shard_sizes(mix), *mix.stream_mix(), s, epoch);
  return plan_mixed_stream_epoch(sources, *mix.stream_mix(), s, epoch, false);
}

// Each rank's own batches (before padding), all ranks together.
std::vector<int64_t> job_samples(const StreamMixture& mix, int64_t world, int64_t streams) {
  std::vector<int64_t> out;
  for (int64_t r = 0; r < world; ++r) {
    const StreamEpoch plan = plan_of(mix, settings(world, r, streams), 0);
    for (size_t b = 0; b < plan.batches_before_evening; ++b) {
      out.insert(out.end(), plan.listed.batches[b].begin(), plan.listed.batches[b].end());
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
  // (stream, source) -> last index read; a shard, once left, is never read again there.
  std::map<std::pair<int32_t, size_t>, int64_t> last;
  std::set<std::pair<int32_t, size_t>> shards_left;  // (stream, shard)
  std::set<size_t> sources_read;
  for (size_t b = 0; b < plan.batches_before_evening; ++b) {
    const int32_t stream = plan.stream_of(b);
    for (int64_t i : plan.batch(b)) {
      const size_t source = mix->source_of(i);
      const size_t shard = mix->locate(i).shard;
      sources_read.insert(source);
      CHECK(shards_left.count({stream, shard}) == 0);
      auto [it, fresh] = last.try_emplace({stream, source}, i);
      if (fresh) continue;
      const size_t previous_shard = mix->locate(it->second).shard;
      if (shard == previous_shard) {
        CHECK(i == it->second + 1);
      } else {
        shards_left.insert({stream, previous_shard});
      }
      it->second = i;
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
    if (r == 0) steps = plan.size();
    CHECK(plan.size() == steps);
    // Every stream stops where the job's first run is read through: equal before evening.
    CHECK(plan.fewest_batches == plan.most_batches);
    CHECK(plan.batches_before_evening == steps);
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
  SequenceSet delivered;
  delivered.assign(mix->size());
  std::vector<int64_t> before;
  for (int64_t r = 0; r < 4; ++r) {
    const StreamEpoch plan = plan_of(*mix, settings(4, r, 2), 0);
    for (size_t b = 0; b < 20; ++b) {
      for (int64_t i : plan.batch(b)) {
        delivered.insert(static_cast<uint64_t>(i));
        before.push_back(i);
      }
    }
  }
  std::vector<int64_t> after;
  size_t steps = 0;
  for (int64_t r = 0; r < 3; ++r) {
    const StreamPlanSettings s = settings(3, r, 2);
    const SourceRanges rest = remaining_of_sources(
        mixture_sources(shard_sizes(*mix), *mix->stream_mix(), s, 0), delivered);
    const StreamEpoch plan = plan_mixed_stream_epoch(rest, *mix->stream_mix(), s, 0, true);
    if (r == 0) steps = plan.size();
    CHECK(plan.size() == steps);
    for (const auto& batch : plan.listed.batches) after.insert(after.end(), batch.begin(), batch.end());
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
  // The workers deliver what the planner gives one rank of 2 streams, with the Loader's seed.
  StreamPlanSettings s = settings(1, 0, 2);
  s.seed = 3;
  const StreamEpoch plan = plan_of(*mix, s, 0);
  std::set<int64_t> planned;
  for (const auto& batch : plan.listed.batches) planned.insert(batch.begin(), batch.end());
  CHECK(seen == planned);
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

TEST_CASE("stream mixture: a job state of 4 ranks resumes on 2, a worker killed, nothing twice",
          "[elastic][process]") {
  const std::filesystem::path crashes = std::filesystem::temp_directory_path() /
                                        ("mploader-mix-" + std::to_string(getpid()));
  const auto make = [&](MixtureEnd end) {
    return [&crashes, end](int64_t world, int64_t rank) {
      LoaderOptions o;
      o.batch_size = 64;
      o.num_workers = 2;
      o.shuffle = true;
      o.shuffle_buffer = 100;
      o.seed = 4;
      o.world_size = world;
      o.rank = rank;
      o.max_restarts_per_epoch = 2;
      o.crash_dir = crashes.string();
      o.timeout = std::chrono::seconds(60);
      return std::make_unique<Loader>(three_corpora(end, 0), o);
    };
  };
  std::map<int64_t, int> seen;
  const auto four = elastic_harness::run_phase(make(MixtureEnd::kFirstExhausted), 4, 0, "", 10,
                                               seen);
  elastic_harness::check_equal_steps(four);
  const auto two = elastic_harness::run_phase(make(MixtureEnd::kFirstExhausted), 2, 0,
                                              four.job(), SIZE_MAX, seen, 2);
  elastic_harness::check_equal_steps(two);
  int twice = 0;
  for (const auto& [index, count] : seen) twice += count > 1 ? 1 : 0;
  CHECK(twice == 0);
  // The epoch ends when a worker's run of one source is read: most samples come before that.
  CHECK(seen.size() > 17500 / 2);
  // A mixture that starts its sources again is refused on another world size, with the reason.
  std::map<int64_t, int> cycled;
  const auto cycle = elastic_harness::run_phase(make(MixtureEnd::kCycle), 2, 0, "", 3, cycled);
  CHECK_THROWS_WITH(cycle.job(), Catch::Contains("cannot resume on another world size"));
  std::filesystem::remove_all(crashes);
}

TEST_CASE("stream mixture: spawn and forkserver workers rebuild it and deliver the same batches",
          "[spawn][process]") {
  const auto mix = three_corpora(MixtureEnd::kAllExhausted, 0, "source");
  REQUIRE(mix->recipe());
  CHECK(mix->recipe()->factory == "mploader.stream_mixture");
  LoaderOptions o;
  o.batch_size = 50;
  o.num_workers = 2;
  o.shuffle = true;
  o.shuffle_buffer = 30;
  o.seed = 12;
  const auto batches_of = [&](const LoaderOptions& options) {
    std::vector<std::vector<int64_t>> out;
    Loader loader(mix, options);
    for (const Batch& batch : loader) {
      const at::Tensor index = batch["index"].contiguous();
      const at::Tensor source = batch["source"];
      for (int64_t j = 0; j < index.size(0); ++j) {
        CHECK(source[j].item<int64_t>() ==
              static_cast<int64_t>(mix->source_of(index[j].item<int64_t>())));
      }
      out.emplace_back(index.data_ptr<int64_t>(), index.data_ptr<int64_t>() + index.numel());
    }
    return out;
  };
  const auto forked = batches_of(o);
  REQUIRE(!forked.empty());
  for (StartMethod method : {StartMethod::kSpawn, StartMethod::kForkserver}) {
    o.start_method = method;
    o.crash_dir = crash_testing::fresh_dir();
    CHECK(batches_of(o) == forked);
  }
}

}  // namespace test_stream_mixture
