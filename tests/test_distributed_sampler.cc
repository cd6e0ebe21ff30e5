// DistributedSampler against torch.utils.data.DistributedSampler: vectors PyTorch 1.13 printed
// once (tests/data/distributed_sampler_vectors.jsonl, made by
// tests/data/distributed_sampler_reference.py --fixed), a live comparison over hundreds of
// random configurations when the project's Python has torch, argument errors, and a Loader fed by it.
#include "python_reference.h"
#include "test_datasets.h"

#include <mploader/distributed_sampler.h>
#include <mploader/errors.h>
#include <mploader/loader.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>

namespace test_distributed_sampler {

using mploader::DistributedSampler;

namespace {

const std::string kDataDir = MPLOADER_TEST_DATA_DIR;

struct Reference {
  nlohmann::json config;
  std::vector<int64_t> indices;
};

std::vector<int64_t> ours(const nlohmann::json& c) {
  DistributedSampler s(c["world_size"].get<int64_t>(), c["rank"].get<int64_t>(),
                       c["shuffle"].get<bool>(), c["seed"].get<uint64_t>(),
                       c["drop_last"].get<bool>());
  return s.indices(c["size"].get<size_t>(), c["epoch"].get<uint64_t>());
}

std::vector<Reference> parse_lines(std::istream& in) {
  std::vector<Reference> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line);
    out.push_back({j, j["indices"].get<std::vector<int64_t>>()});
  }
  return out;
}

}  // namespace

TEST_CASE("distributed sampler: matches PyTorch's vectors checked into the repo",
          "[distributed]") {
  std::ifstream in(kDataDir + "/distributed_sampler_vectors.jsonl");
  REQUIRE(in.good());
  const std::vector<Reference> refs = parse_lines(in);
  REQUIRE(refs.size() == 58);
  for (const Reference& r : refs) {
    INFO(r.config.dump());
    CHECK(ours(r.config) == r.indices);
    DistributedSampler s(r.config["world_size"].get<int64_t>(), r.config["rank"].get<int64_t>(),
                         true, 0, r.config["drop_last"].get<bool>());
    CHECK(s.num_samples(r.config["size"].get<size_t>()) == r.indices.size());
  }
  // Spot checks written out, so a broken file cannot hide a broken sampler: 3 samples over 8
  // ranks pads by repeating the order (more than once); drop_last leaves nothing.
  CHECK(DistributedSampler(8, 7, false, 7, false).indices(3, 1) == std::vector<int64_t>{1});
  CHECK(DistributedSampler(8, 5, false, 7, false).indices(3, 1) == std::vector<int64_t>{2});
  CHECK(DistributedSampler(8, 0, true, 7, true).indices(3, 1).empty());
  CHECK(DistributedSampler(3, 0, true, 0, false).indices(10, 0) ==
        std::vector<int64_t>{4, 5, 0, 2});
}

TEST_CASE("distributed sampler: matches live PyTorch over 400 random configurations",
          "[distributed][python]") {
  const std::string python = MPLOADER_PYTHON;  // the project's: cmake/python.cmake
  if (const auto why = testing_python::torch_missing(python)) {
    WARN("skipped: " << *why << ", so torch.utils.data.DistributedSampler cannot run");
    return;
  }
  std::mt19937_64 rng(20240605);
  std::ostringstream configs;
  for (int i = 0; i < 400; ++i) {
    const uint64_t world = 1 + rng() % 64;
    const uint64_t size = i % 10 == 0 ? rng() % 5000 : rng() % 200;
    configs << size << ' ' << world << ' ' << rng() % world << ' ' << rng() % (1ULL << 40)
            << ' ' << rng() % 50 << ' ' << rng() % 2 << ' ' << rng() % 2 << '\n';
  }
  const std::optional<std::string> out = testing_python::run_with_input(
      python + " " + kDataDir + "/distributed_sampler_reference.py", configs.str());
  REQUIRE(out.has_value());
  std::istringstream lines(*out);
  const std::vector<Reference> refs = parse_lines(lines);
  REQUIRE(refs.size() == 400);
  int compared = 0;
  for (const Reference& r : refs) {
    INFO(r.config.dump());
    REQUIRE(ours(r.config) == r.indices);
    ++compared;
  }
  CHECK(compared == 400);
}

TEST_CASE("distributed sampler: bad world size or rank is an OptionError naming it",
          "[distributed]") {
  auto option_of = [](int64_t world, int64_t rank) -> std::string {
    try {
      DistributedSampler(world, rank);
    } catch (const mploader::OptionError& e) {
      return e.option() + ": " + e.what();
    }
    return "no error";
  };
  CHECK_THAT(option_of(0, 0), Catch::StartsWith("world_size:") && Catch::Contains("is 0"));
  CHECK_THAT(option_of(-2, 0), Catch::StartsWith("world_size:") && Catch::Contains("-2"));
  CHECK_THAT(option_of(4, 4),
             Catch::StartsWith("rank:") && Catch::Contains("rank 4 is outside [0, 4)"));
  CHECK_THAT(option_of(4, -1), Catch::StartsWith("rank:") && Catch::Contains("-1"));
  CHECK(option_of(4, 3) == "no error");
}

TEST_CASE("distributed sampler: ranks of a Loader each get their share, together all samples",
          "[distributed]") {
  const size_t n = 103;
  const int64_t world = 4;
  std::multiset<int64_t> seen;
  for (int64_t rank = 0; rank < world; ++rank) {
    mploader::LoaderOptions o;
    o.sampler = std::make_shared<DistributedSampler>(world, rank, true, 5);
    o.batch_size = 8;
    o.num_workers = rank % 2 == 0 ? 0 : 2;
    o.rank = rank;
    o.world_size = world;
    mploader::Loader loader(std::make_shared<testing_datasets::CountingDataset>(n), o);
    loader.set_epoch(3);
    size_t rank_samples = 0;
    for (mploader::Batch& b : loader) {
      for (int64_t i = 0; i < b["label"].size(0); ++i) seen.insert(b["label"][i].item<int64_t>());
      rank_samples += b.size();
    }
    CHECK(rank_samples == 26);  // ceil(103 / 4)
  }
  CHECK(seen.size() == 104);  // one padded repeat
  for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) CHECK(seen.count(i) >= 1);
}

}  // namespace test_distributed_sampler
