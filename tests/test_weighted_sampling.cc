// WeightedRandomSampler, SubsetRandomSampler, SubsetSampler and DistributedWeightedSampler:
// PyTorch's indices (vectors PyTorch printed once, tests/data/weighted_sampler_vectors.jsonl,
// and a live comparison when the project's Python has torch), a long-tailed label histogram
// balanced through a Loader with worker processes, the ranks' shares, resume, and bad input.
#include "error_text.h"
#include "python_reference.h"
#include "test_datasets.h"

#include <mploader/distributed_sampler.h>
#include <mploader/errors.h>
#include <mploader/loader.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <torch/version.h>

#include <unistd.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>

namespace test_weighted_sampling {

using namespace mploader;
using testing_datasets::CountingDataset;

using testing_errors::option_error;

namespace {

const std::string kDataDir = MPLOADER_TEST_DATA_DIR;

std::vector<int64_t> ours(const nlohmann::json& c) {
  const uint64_t seed = c["seed"].get<uint64_t>(), epoch = c["epoch"].get<uint64_t>();
  if (c["kind"] == "weighted") {
    const auto weights = c["weights"].get<std::vector<double>>();
    WeightedRandomSampler s(weights, c["num_samples"].get<int64_t>(),
                            c["replacement"].get<bool>(), seed);
    return s.indices(weights.size(), epoch);
  }
  const auto subset = c["indices"].get<std::vector<int64_t>>();
  SubsetRandomSampler s(subset, seed);
  return s.indices(static_cast<size_t>(c["size"].get<int64_t>()), epoch);
}

size_t compare_lines(std::istream& in) {
  size_t compared = 0;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const nlohmann::json c = nlohmann::json::parse(line);
    INFO(line.substr(0, 300));
    REQUIRE(ours(c) == c["indices_out"].get<std::vector<int64_t>>());
    ++compared;
  }
  return compared;
}

// A random configuration of either sampler: weights with zeros among them, any draw size
// PyTorch accepts.
nlohmann::json random_config(std::mt19937_64& rng, int i) {
  nlohmann::json c;
  c["seed"] = rng() % (1ULL << 40);
  c["epoch"] = rng() % 50;
  const size_t n = 1 + rng() % (i % 10 == 0 ? 3000 : 120);
  if (i % 3 == 2) {
    std::vector<int64_t> subset;
    for (size_t k = 0; k < n; ++k) subset.push_back(static_cast<int64_t>(rng() % (2 * n)));
    c["kind"] = "subset_random";
    c["indices"] = subset;
    c["size"] = 2 * n;
    return c;
  }
  std::vector<double> weights;
  size_t positive = 0;
  for (size_t k = 0; k < n; ++k) {
    const double w = rng() % 4 == 0 ? 0.0 : static_cast<double>(rng() % 1000) / 7.0 + 0.01;
    positive += w > 0;
    weights.push_back(w);
  }
  if (positive == 0) weights[0] = 1, positive = 1;
  const bool replacement = rng() % 2 == 0;
  c["kind"] = "weighted";
  c["weights"] = weights;
  c["replacement"] = replacement;
  c["num_samples"] = replacement ? 1 + rng() % (3 * n) : 1 + rng() % positive;
  return c;
}

// Label-only samples: "label" is the class of each index, classes in long-tailed proportions.
class LabelDataset : public Dataset {
 public:
  explicit LabelDataset(std::vector<int64_t> labels) : labels_(std::move(labels)) {}
  size_t size() const override { return labels_.size(); }
  Sample get(int64_t index) override {
    return {{"label", at::scalar_tensor(labels_[static_cast<size_t>(index)], at::kLong)},
            {"index", at::scalar_tensor(index, at::kLong)}};
  }

 private:
  std::vector<int64_t> labels_;
};

}  // namespace

TEST_CASE("weighted sampling: weighted and subset-random samplers match PyTorch's vectors",
          "[sampler]") {
  std::ifstream in(kDataDir + "/weighted_sampler_vectors.jsonl");
  REQUIRE(in.good());
  CHECK(compare_lines(in) == 24);
  // Written out, so a broken vectors file cannot hide a broken sampler: PyTorch 2.13,
  // WeightedRandomSampler([0.1, 0.9, 0.4, 0.7, 3.0], 4, replacement=False) and
  // SubsetRandomSampler([7, 3, 9, 1]) with torch.Generator().manual_seed(5).
  CHECK(WeightedRandomSampler({0.1, 0.9, 0.4, 0.7, 3.0}, 4, false, 2).indices(5, 3) ==
        std::vector<int64_t>{4, 1, 3, 2});
  CHECK(SubsetRandomSampler({7, 3, 9, 1}, 5).indices(10, 0) == std::vector<int64_t>{1, 3, 7, 9});
}

TEST_CASE("weighted sampling: matches live PyTorch over 300 random configurations",
          "[sampler][python]") {
  const std::string python = MPLOADER_PYTHON;
  if (const auto why = testing_python::torch_missing(python)) {
    WARN("skipped: " << *why << ", so PyTorch's samplers cannot run");
    return;
  }
  // Parity holds with the PyTorch of the libtorch this build links: torch.multinomial itself
  // changed between releases (2.x draws one sample with replacement by its no-replacement fast
  // path, 1.13 did not), so a 2.13 reference says nothing about a 1.13 build.
  const std::string ours_version =
      std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + ".";
  const auto theirs_version =
      testing_python::run(python + " -c 'import torch; print(torch.__version__)'");
  REQUIRE(theirs_version.has_value());
  if (theirs_version->rfind(ours_version, 0) != 0) {
    WARN("skipped: " << python << " has torch " << *theirs_version << "and this build links "
                     "libtorch " << ours_version << "x; PyTorch's samplers are the reference "
                     "only for their own release");
    return;
  }
  std::mt19937_64 rng(20261124);
  std::ostringstream configs;
  for (int i = 0; i < 300; ++i) configs << random_config(rng, i).dump() << '\n';
  const auto out = testing_python::run_with_input(
      python + " " + kDataDir + "/weighted_sampler_reference.py", configs.str());
  REQUIRE(out.has_value());
  std::istringstream lines(*out);
  CHECK(compare_lines(lines) == 300);
}

TEST_CASE("weighted sampling: draws are per (seed, epoch), without replacement distinct, zero "
          "weights never drawn", "[sampler]") {
  std::vector<double> w(200, 1.0);
  for (size_t i = 0; i < w.size(); i += 4) w[i] = 0;  // 50 samples never drawn
  WeightedRandomSampler without(w, 150, false, 9);
  const auto e3 = without.indices(200, 3);
  CHECK(e3 == WeightedRandomSampler(w, 150, false, 9).indices(200, 3));
  CHECK(e3 != without.indices(200, 4));
  CHECK(std::set<int64_t>(e3.begin(), e3.end()).size() == 150);  // every positive one, once
  for (int64_t i : e3) CHECK(i % 4 != 0);
  WeightedRandomSampler with(w, 5000, true, 9);
  for (int64_t i : with.indices(200, 0)) REQUIRE(i % 4 != 0);

  SubsetSampler in_order({5, 2, 2, 9});
  CHECK(in_order.indices(10, 0) == std::vector<int64_t>{5, 2, 2, 9});
  CHECK(in_order.indices(10, 7) == std::vector<int64_t>{5, 2, 2, 9});
  SubsetRandomSampler shuffled({10, 20, 30, 40, 50, 60}, 1);
  auto a = shuffled.indices(61, 0), b = shuffled.indices(61, 1);
  CHECK(a != b);
  std::sort(a.begin(), a.end());
  CHECK(a == std::vector<int64_t>{10, 20, 30, 40, 50, 60});
}

TEST_CASE("weighted sampling: weights whose sum overflows draw in proportion, not one index",
          "[sampler]") {
  const double huge = std::numeric_limits<double>::max();
  // Their sum is inf; torch.multinomial then draws the last positive index every time.
  for (const std::vector<double>& w : {std::vector<double>{1e308, 1e308},
                                       std::vector<double>{huge, 0, huge}}) {
    CAPTURE(w.size());
    const auto draws = WeightedRandomSampler(w, 4000, true, 5).indices(w.size(), 0);
    std::map<int64_t, int64_t> h;
    for (int64_t i : draws) ++h[i];
    INFO("first " << h[0] << ", last " << h[static_cast<int64_t>(w.size()) - 1]);
    CHECK(std::abs(h[0] - 2000) < 5 * std::sqrt(4000 * 0.25));
    CHECK(h[0] + h[static_cast<int64_t>(w.size()) - 1] == 4000);
    // Every rank's stride of one global draw, as for ordinary weights.
    const auto global = WeightedRandomSampler(w, 4000, true, 5).indices(w.size(), 1);
    DistributedWeightedSampler rank1(w, 2, 1, 2000, true, 5);
    const auto mine = rank1.indices(w.size(), 1);
    REQUIRE(mine.size() == 2000);
    for (size_t i = 0; i < mine.size(); ++i) REQUIRE(mine[i] == global[1 + 2 * i]);
  }
  const auto distinct = WeightedRandomSampler({huge, huge, huge}, 3, false, 2).indices(3, 0);
  CHECK(std::set<int64_t>(distinct.begin(), distinct.end()).size() == 3);
}

TEST_CASE("weighted sampling: an epoch too long to hold is an OptionError naming num_samples",
          "[sampler]") {
  // 1e12 draws failed in libtorch's allocator, with 3.4 KB of stack frames.
  CHECK_THAT(option_error([] { WeightedRandomSampler({1, 1}, 1000000000000); }),
             Catch::StartsWith("num_samples:") && Catch::Contains("1000000000000") &&
                 Catch::Contains("WeightedRandomSampler"));
  CHECK(option_error([] { WeightedRandomSampler({1, 1}, 1000000000); }) == "no error");
  // Every rank draws the whole job's sample: num_samples x world_size is what counts.
  CHECK_THAT(option_error([] { DistributedWeightedSampler({1, 1}, 4, 0, 300000000); }),
             Catch::StartsWith("num_samples:") && Catch::Contains("1200000000"));
}

TEST_CASE("weighted sampling: distributed ranks get equal counts, disjoint without replacement",
          "[sampler][distributed]") {
  std::vector<double> w(103);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 1.0 + static_cast<double>(i % 7);
  for (const bool replacement : {false, true}) {
    const int64_t world = 4;
    // Default counts: floor(103 / 4) = 25 without replacement, ceil = 26 with.
    const size_t per_rank = replacement ? 26 : 25;
    const auto global =
        WeightedRandomSampler(w, static_cast<int64_t>(per_rank) * world, replacement, 11)
            .indices(103, 2);
    std::multiset<int64_t> all;
    for (int64_t rank = 0; rank < world; ++rank) {
      DistributedWeightedSampler s(w, world, rank, 0, replacement, 11);
      const auto mine = s.indices(103, 2);
      REQUIRE(mine.size() == per_rank);
      for (size_t i = 0; i < mine.size(); ++i) {
        CHECK(mine[i] == global[static_cast<size_t>(rank) + i * world]);  // PyTorch's [r::world]
      }
      all.insert(mine.begin(), mine.end());
    }
    if (!replacement) CHECK(std::set<int64_t>(all.begin(), all.end()).size() == 100);
  }
}

TEST_CASE("weighted sampling: 1/count weights balance a long-tailed label histogram through "
          "2 worker processes", "[sampler][process]") {
  // Six classes, each 2.5 times rarer than the one before: 62% of the samples are class 0 and
  // 0.6% class 5. Weighting each sample 1 / (its class's count) draws every class 1/6 of the time.
  const std::vector<int64_t> counts{2000, 800, 320, 128, 51, 20};
  std::vector<int64_t> labels;
  std::vector<double> weights;
  for (size_t c = 0; c < counts.size(); ++c) {
    for (int64_t i = 0; i < counts[c]; ++i) {
      labels.push_back(static_cast<int64_t>(c));
      weights.push_back(1.0 / static_cast<double>(counts[c]));
    }
  }
  const int64_t draws = 60000;
  LoaderOptions o;
  o.num_workers = 2;
  o.batch_size = 500;
  o.sampler = std::make_shared<WeightedRandomSampler>(weights, draws, true, 42);
  Loader loader(std::make_shared<LabelDataset>(labels), o);
  std::vector<int64_t> per_class(counts.size(), 0);
  std::vector<int64_t> epoch0;
  for (Batch& b : loader) {
    for (int64_t i = 0; i < b["label"].size(0); ++i) ++per_class[b["label"][i].item<int64_t>()];
    epoch0.insert(epoch0.end(), b.indices().begin(), b.indices().end());
  }
  CHECK(epoch0 == WeightedRandomSampler(weights, draws, true, 42).indices(labels.size(), 0));
  // Binomial: sd = sqrt(n p (1 - p)) = 91 draws for p = 1/6; 5 sd either side.
  const double expected = draws / 6.0, sd = std::sqrt(draws * (1.0 / 6) * (5.0 / 6));
  for (size_t c = 0; c < counts.size(); ++c) {
    INFO("class " << c << ": " << per_class[c] << " of " << draws << " draws");
    CHECK(std::abs(per_class[c] - expected) < 5 * sd);
  }
}

TEST_CASE("weighted sampling: a Loader resumes a weighted epoch, and refuses another weighting",
          "[sampler][resume][process]") {
  std::vector<double> w(300);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<double>(i % 10) + 0.5;
  auto options = [&](double scale) {
    LoaderOptions o;
    o.num_workers = 2;
    o.batch_size = 16;
    std::vector<double> scaled = w;
    scaled[0] *= scale;
    o.sampler = std::make_shared<WeightedRandomSampler>(scaled, 200, false, 3);
    return o;
  };
  auto data = std::make_shared<CountingDataset>(300);
  std::vector<std::vector<int64_t>> whole;
  {
    Loader loader(data, options(1));
    loader.set_epoch(4);
    for (Batch& b : loader) whole.push_back(b.indices());
  }
  std::string state;
  {
    Loader first(data, options(1));
    first.set_epoch(4);
    for (int i = 0; i < 5; ++i) REQUIRE(first.next()->indices() == whole[i]);
    state = first.state_dict();
  }
  Loader resumed(data, options(1));
  resumed.load_state_dict(state);
  std::vector<std::vector<int64_t>> rest;
  for (Batch& b : resumed) rest.push_back(b.indices());
  CHECK(rest == std::vector<std::vector<int64_t>>(whole.begin() + 5, whole.end()));
  Loader other(data, options(50));
  CHECK_THAT(option_error([&] { other.load_state_dict(state); }),
             Catch::StartsWith("state:") && Catch::Contains("orders the batches differently"));
}

TEST_CASE("weighted sampling: bad weights, counts and indices are OptionErrors naming them",
          "[sampler]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  auto weighted = [](std::vector<double> w, int64_t n, bool replacement = true) {
    return [=] { WeightedRandomSampler(w, n, replacement); };
  };
  CHECK_THAT(option_error(weighted({}, 3)), Catch::StartsWith("weights:") &&
                                                Catch::Contains("no weights"));
  CHECK_THAT(option_error(weighted({1, -0.5, 2}, 3)),
             Catch::StartsWith("weights:") && Catch::Contains("weights[1] is -0.5"));
  CHECK_THAT(option_error(weighted({1, nan}, 3)), Catch::Contains("weights[1] is nan"));
  CHECK_THAT(option_error(weighted({inf, 1}, 3)), Catch::Contains("weights[0] is inf"));
  CHECK_THAT(option_error(weighted({0, 0, 0}, 3)),
             Catch::StartsWith("weights:") && Catch::Contains("all 3 weights are 0"));
  CHECK_THAT(option_error(weighted({1, 2}, 0)),
             Catch::StartsWith("num_samples:") && Catch::Contains("num_samples is 0"));
  CHECK_THAT(option_error(weighted({1, 0, 2}, 3, false)),
             Catch::StartsWith("num_samples:") &&
                 Catch::Contains("num_samples 3 without replacement is more than the 2 samples"));
  CHECK(option_error(weighted({1, 0, 2}, 2, false)) == "no error");
  CHECK_THAT(option_error([] { DistributedWeightedSampler({1, 1, 1}, 4, 0, 0, false); }),
             Catch::StartsWith("num_samples:") && Catch::Contains("num_samples is 0"));
  CHECK_THAT(option_error([] { DistributedWeightedSampler({1, 1}, 2, 2); }),
             Catch::StartsWith("rank:") && Catch::Contains("rank 2 is outside [0, 2)"));
  CHECK_THAT(option_error([] { SubsetRandomSampler({0, 4, -1}); }),
             Catch::StartsWith("indices:") && Catch::Contains("indices[2] is -1"));

  // Fitted to the dataset when the Loader is built, before any worker starts.
  auto loader_with = [](std::shared_ptr<Sampler> sampler) {
    return [sampler] {
      LoaderOptions o;
      o.num_workers = 2;
      o.sampler = sampler;
      Loader(std::make_shared<CountingDataset>(10), o);
    };
  };
  CHECK_THAT(option_error(loader_with(std::make_shared<WeightedRandomSampler>(
                 std::vector<double>(12, 1.0), 5))),
             Catch::StartsWith("sampler:") &&
                 Catch::Contains("has 12 weights for a dataset of 10 samples"));
  CHECK_THAT(option_error(loader_with(std::make_shared<DistributedWeightedSampler>(
                 std::vector<double>(9, 1.0), 2, 1))),
             Catch::StartsWith("sampler:") &&
                 Catch::Contains("has 9 weights for a dataset of 10 samples"));
  CHECK_THAT(option_error(loader_with(std::make_shared<SubsetSampler>(
                 std::vector<int64_t>{1, 2, 10}))),
             Catch::StartsWith("indices:") &&
                 Catch::Contains("indices[2] is 10, outside a dataset of 10 samples"));
  CHECK_THAT(option_error(loader_with(std::make_shared<SubsetRandomSampler>(
                 std::vector<int64_t>{11}))),
             Catch::Contains("indices[0] is 11"));
}

}  // namespace test_weighted_sampling
