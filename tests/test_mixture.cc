// MixtureSampler: a 3-corpus mixture at 0.5 / 0.3 / 0.2 over 100k draws, passes through each
// source, the three epoch-end rules, a resumed Loader continuing the same mixture, token
// corpora (TokenStream) as sources, bad input.
#include "error_text.h"
#include "test_datasets.h"

#include <mploader/compose.h>
#include <mploader/errors.h>
#include <mploader/loader.h>
#include <mploader/mixture.h>
#include <mploader/token_stream.h>

#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <tuple>

namespace test_mixture {

using namespace mploader;
using testing_datasets::CountingDataset;

using testing_errors::option_error;

namespace {

MixtureOptions mixture(std::vector<double> weights, MixtureEnd end, int64_t num_samples,
                       uint64_t seed = 0) {
  MixtureOptions o;
  o.weights = std::move(weights);
  o.end = end;
  o.num_samples = num_samples;
  o.seed = seed;
  return o;
}

// How often each index came, and the index draw by draw.
std::map<int64_t, int64_t> histogram(const std::vector<int64_t>& draws) {
  std::map<int64_t, int64_t> h;
  for (int64_t i : draws) ++h[i];
  return h;
}

}  // namespace

TEST_CASE("mixture: 3 corpora at 0.5/0.3/0.2 over 100k draws, each source read in passes",
          "[sampler][mixture]") {
  const std::vector<size_t> sizes{10000, 20000, 5000};  // web, books, code
  MixtureSampler s(sizes, mixture({5, 3, 2}, MixtureEnd::kCycle, 100000, 17));
  CHECK(s.probabilities() == std::vector<double>{0.5, 0.3, 0.2});  // normalised from 5/3/2
  const std::vector<int64_t> draws = s.indices(35000, 0);
  REQUIRE(draws.size() == 100000);
  std::vector<int64_t> per_source(3, 0);
  for (int64_t i : draws) ++per_source[s.source_of(i)];
  const std::vector<double> p{0.5, 0.3, 0.2};
  for (size_t k = 0; k < 3; ++k) {
    const double sd = std::sqrt(100000 * p[k] * (1 - p[k]));  // 158, 145, 126 draws
    INFO("source " << k << ": " << per_source[k] << " draws");
    CHECK(std::abs(per_source[k] - 100000 * p[k]) < 5 * sd);
  }
  // A source is read in whole passes: two of its samples never differ by more than one read.
  const auto h = histogram(draws);
  for (size_t k = 0; k < 3; ++k) {
    const int64_t first = k == 0 ? 0 : k == 1 ? 10000 : 30000;
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = 0;
    for (int64_t i = first; i < first + static_cast<int64_t>(sizes[k]); ++i) {
      const int64_t n = h.count(i) ? h.at(i) : 0;
      lo = std::min(lo, n);
      hi = std::max(hi, n);
    }
    INFO("source " << k);
    CHECK(hi - lo <= 1);
  }
  CHECK(s.source_of(9999) == 0);
  CHECK(s.source_of(10000) == 1);
  CHECK(s.source_of(34999) == 2);
  // The same (seed, epoch) draws the same; another epoch other draws.
  CHECK(MixtureSampler(sizes, mixture({5, 3, 2}, MixtureEnd::kCycle, 100000, 17))
            .indices(35000, 0) == draws);
  CHECK(s.indices(35000, 1) != draws);
}

TEST_CASE("mixture: first_exhausted and all_exhausted end where documented",
          "[sampler][mixture]") {
  const std::vector<size_t> sizes{50, 400, 30, 7};  // source 3 has weight 0
  const std::vector<double> weights{1, 1, 2, 0};
  for (uint64_t epoch = 0; epoch < 20; ++epoch) {
    MixtureSampler first(sizes, mixture(weights, MixtureEnd::kFirstExhausted, 0, epoch));
    const auto a = first.indices(487, epoch);
    const auto ha = histogram(a);
    CHECK(ha.size() == a.size());  // no sample twice
    std::vector<size_t> per_source(4, 0);
    for (int64_t i : a) ++per_source[first.source_of(i)];
    const size_t last = first.source_of(a.back());
    CHECK(per_source[last] == sizes[last]);  // the last draw completed a source...
    for (size_t k = 0; k < 4; ++k) {
      if (k != last) CHECK(per_source[k] < std::max<size_t>(sizes[k], 1));  // ...the only one
    }
    CHECK(per_source[3] == 0);

    MixtureSampler all(sizes, mixture(weights, MixtureEnd::kAllExhausted, 0, epoch));
    const auto b = all.indices(487, epoch);
    const auto hb = histogram(b);
    for (int64_t i = 0; i < 480; ++i) REQUIRE(hb.count(i) == 1);  // every sample of 0..2 came
    for (int64_t i = 480; i < 487; ++i) REQUIRE(hb.count(i) == 0);  // weight 0: never
    // The last draw is the first time its sample came: it completed the last first pass.
    CHECK(hb.at(b.back()) == 1);
    CHECK(all.source_of(b.back()) == 1);  // 400 samples at 1/4: by far the slowest
    // A cap bounds either rule.
    CHECK(MixtureSampler(sizes, mixture(weights, MixtureEnd::kAllExhausted, 100, epoch))
              .indices(487, epoch)
              .size() == 100);
  }
  // Unshuffled passes read each source in index order.
  MixtureOptions plain = mixture({1, 1}, MixtureEnd::kFirstExhausted, 0);
  plain.shuffle = false;
  std::vector<int64_t> src0, src1;
  for (int64_t i : MixtureSampler({5, 5}, plain).indices(10, 0)) (i < 5 ? src0 : src1).push_back(i);
  CHECK(std::is_sorted(src0.begin(), src0.end()));
  CHECK(std::is_sorted(src1.begin(), src1.end()));
  CHECK((src0.size() == 5 || src1.size() == 5));
}

TEST_CASE("mixture: a resumed Loader over a ConcatDataset continues the same mixture, and "
          "refuses another", "[sampler][mixture][resume][process]") {
  auto data = std::make_shared<ConcatDataset>(
      std::vector<std::shared_ptr<Dataset>>{std::make_shared<CountingDataset>(120),
                                            std::make_shared<CountingDataset>(60),
                                            std::make_shared<CountingDataset>(30)},
      "source");
  const std::vector<size_t> sizes = data->sizes();
  REQUIRE(sizes == std::vector<size_t>{120, 60, 30});
  const MixtureSampler reference(sizes, mixture({0.5, 0.3, 0.2}, MixtureEnd::kCycle, 400, 8));
  auto options = [&](std::vector<double> weights) {
    LoaderOptions o;
    o.num_workers = 2;
    o.batch_size = 10;
    o.sampler = std::make_shared<MixtureSampler>(
        sizes, mixture(std::move(weights), MixtureEnd::kCycle, 400, 8));
    return o;
  };
  std::vector<std::vector<int64_t>> whole;
  {
    Loader loader(data, options({0.5, 0.3, 0.2}));
    loader.set_epoch(2);
    for (Batch& b : loader) {
      for (int64_t i = 0; i < b["label"].size(0); ++i) {  // each row from the source drawn
        const int64_t index = b.indices()[static_cast<size_t>(i)];
        const size_t source = reference.source_of(index);
        REQUIRE(b["source"][i].item<int64_t>() == static_cast<int64_t>(source));
        REQUIRE(b["label"][i].item<int64_t>() == index - data->offset(source));
      }
      whole.push_back(b.indices());
    }
  }
  REQUIRE(whole.size() == 40);
  std::string state;
  {
    Loader first(data, options({0.5, 0.3, 0.2}));
    first.set_epoch(2);
    for (int i = 0; i < 13; ++i) REQUIRE(first.next()->indices() == whole[i]);
    state = first.state_dict();
  }
  Loader resumed(data, options({0.5, 0.3, 0.2}));
  resumed.load_state_dict(state);
  CHECK(resumed.epoch() == 2);
  std::vector<std::vector<int64_t>> rest;
  for (Batch& b : resumed) rest.push_back(b.indices());
  CHECK(rest == std::vector<std::vector<int64_t>>(whole.begin() + 13, whole.end()));
  Loader other(data, options({0.4, 0.4, 0.2}));
  CHECK_THAT(option_error([&] { other.load_state_dict(state); }),
             Catch::StartsWith("state:") && Catch::Contains("orders the batches differently"));
}

TEST_CASE("mixture: bad weights, sizes and counts are OptionErrors naming them",
          "[sampler][mixture]") {
  auto make = [](std::vector<size_t> sizes, MixtureOptions o) {
    return [=] { MixtureSampler(sizes, o); };
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK_THAT(option_error(make({}, mixture({}, MixtureEnd::kCycle, 0))),
             Catch::StartsWith("source_sizes:") && Catch::Contains("no sources"));
  CHECK_THAT(option_error(make({3, 4}, mixture({1}, MixtureEnd::kCycle, 0))),
             Catch::StartsWith("weights:") && Catch::Contains("has 1 weights for 2 sources"));
  CHECK_THAT(option_error(make({3, 4}, mixture({1, -1}, MixtureEnd::kCycle, 0))),
             Catch::StartsWith("weights:") && Catch::Contains("weights[1] is -1"));
  CHECK_THAT(option_error(make({3, 4}, mixture({nan, 1}, MixtureEnd::kCycle, 0))),
             Catch::Contains("weights[0] is nan"));
  CHECK_THAT(option_error(make({3, 4}, mixture({0, 0}, MixtureEnd::kCycle, 0))),
             Catch::Contains("all 2 weights are 0"));
  CHECK_THAT(option_error(make({3, 0}, mixture({1, 1}, MixtureEnd::kCycle, 0))),
             Catch::StartsWith("source_sizes:") &&
                 Catch::Contains("source 1 has weight 1 ") && Catch::Contains("no samples"));
  CHECK(option_error(make({3, 0}, mixture({1, 0}, MixtureEnd::kCycle, 0))) == "no error");
  CHECK_THAT(option_error(make({3, 4}, mixture({1, 1}, MixtureEnd::kCycle, -5))),
             Catch::StartsWith("num_samples:") && Catch::Contains("num_samples is -5"));
  CHECK_THAT(option_error(make({1000000, 10}, mixture({1e-6, 1}, MixtureEnd::kAllExhausted, 0))),
             Catch::StartsWith("num_samples:") && Catch::Contains("set num_samples to bound it"));
  CHECK(option_error(make({1000000, 10}, mixture({1e-6, 1}, MixtureEnd::kAllExhausted, 50))) ==
        "no error");
  CHECK_THAT(option_error([] {
               LoaderOptions o;
               o.sampler = std::make_shared<MixtureSampler>(
                   std::vector<size_t>{5, 6}, mixture({1, 1}, MixtureEnd::kCycle, 0));
               Loader(std::make_shared<CountingDataset>(12), o);
             }),
             Catch::StartsWith("sampler:") &&
                 Catch::Contains("built for sources of 11 samples in all, and the dataset has 12"));
}

TEST_CASE("mixture: weights whose sum overflows are normalised, and every draw finds a source",
          "[sampler][mixture]") {
  const double huge = std::numeric_limits<double>::max();
  for (const MixtureEnd end : {MixtureEnd::kCycle, MixtureEnd::kAllExhausted}) {
    CAPTURE(static_cast<int>(end));
    // 1e308 + 1e308 is inf: dividing by the sum made every probability 0.
    MixtureSampler s({500, 700}, mixture({1e308, 1e308}, end, 2000, 3));
    CHECK(s.probabilities() == std::vector<double>{0.5, 0.5});
    const std::vector<int64_t> draws = s.indices(1200, 0);
    REQUIRE(!draws.empty());
    std::vector<int64_t> per_source(2, 0);
    for (int64_t i : draws) {
      REQUIRE((i >= 0 && i < 1200));
      ++per_source[s.source_of(i)];
    }
    const double n = static_cast<double>(draws.size()), sd = std::sqrt(n * 0.25);
    INFO(per_source[0] << " and " << per_source[1] << " of " << draws.size());
    CHECK(std::abs(per_source[0] - n / 2) < 5 * sd);
  }
  MixtureSampler three({4, 4, 4}, mixture({huge, 0, huge / 2}, MixtureEnd::kCycle, 300));
  CHECK(three.probabilities()[1] == 0);
  CHECK(std::abs(three.probabilities()[0] - 2.0 / 3) < 1e-12);
  for (int64_t i : three.indices(12, 0)) CHECK(three.source_of(i) != 1);
  // Ordinary weights keep the probabilities (and so the draws) they had.
  CHECK(MixtureSampler({1, 1, 1}, mixture({5, 3, 2}, MixtureEnd::kCycle, 0)).probabilities() ==
        std::vector<double>{5.0 / 10, 3.0 / 10, 2.0 / 10});
}

TEST_CASE("mixture: an epoch too long to hold is an OptionError naming num_samples",
          "[sampler][mixture]") {
  auto make = [](std::vector<size_t> sizes, MixtureOptions o) {
    return [=] { MixtureSampler(sizes, o); };
  };
  // kCycle had no bound: 1e12 draws filled memory for seconds, then threw std::bad_alloc.
  CHECK_THAT(option_error(make({5, 7}, mixture({1, 1}, MixtureEnd::kCycle, 1000000000000))),
             Catch::StartsWith("num_samples:") && Catch::Contains("1000000000000") &&
                 Catch::Contains("1000000000"));
  CHECK(option_error(make({5, 7}, mixture({1, 1}, MixtureEnd::kCycle, 1000000000))) ==
        "no error");
  // An upper bound past the limit, on an epoch that would not end sooner.
  CHECK_THAT(option_error(make({1000000, 10}, mixture({1e-6, 1}, MixtureEnd::kAllExhausted,
                                                        1000000000000))),
             Catch::StartsWith("num_samples:") && Catch::Contains("1000000000000"));
  // ... and one the sources end long before: those epochs are short.
  CHECK(option_error(make({1000000, 10}, mixture({1e-6, 1}, MixtureEnd::kFirstExhausted,
                                                   1000000000000))) == "no error");
  // A large source of weight 0 does not size an epoch that the small one ends.
  MixtureSampler small({3000000000, 10}, mixture({0, 1}, MixtureEnd::kFirstExhausted, 0));
  CHECK(small.indices(3000000010, 0).size() == 10);
}

TEST_CASE("mixture: token corpora (TokenStream sources) mixed 0.5/0.3/0.2 through 2 workers",
          "[sampler][mixture][tokens][process]") {
  // Three corpora whose token ids keep apart (web [0, 20000), books [20000, 40000), code
  // [40000, 60000)), so every window says which corpus it was cut from.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("mploader-mixture-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const int64_t context = 16;
  std::vector<std::shared_ptr<Dataset>> corpora;
  for (const auto& [name, windows, first] :
       std::vector<std::tuple<std::string, int64_t, uint16_t>>{
           {"web", 200, 0}, {"books", 150, 20000}, {"code", 100, 40000}}) {
    const std::filesystem::path path = dir / (name + ".bin");
    std::ofstream out(path, std::ios::binary);
    for (int64_t i = 0; i < windows * context + 1; ++i) {
      const uint16_t id = static_cast<uint16_t>(first + i % 20000);
      out.write(reinterpret_cast<const char*>(&id), sizeof id);
    }
    out.close();
    TokenStreamOptions t;
    t.context = context;
    corpora.push_back(std::make_shared<TokenStream>(std::vector<std::string>{path.string()}, t));
  }
  auto data = std::make_shared<ConcatDataset>(corpora, "corpus");
  // Sequential windows start at an offset per epoch, so a file holds one window less.
  REQUIRE(data->sizes() == std::vector<size_t>{199, 149, 99});
  const MixtureOptions mix = mixture({0.5, 0.3, 0.2}, MixtureEnd::kCycle, 3000, 4);
  const MixtureSampler reference(data->sizes(), mix);
  LoaderOptions o;
  o.num_workers = 2;
  o.batch_size = 50;
  o.sampler = std::make_shared<MixtureSampler>(data->sizes(), mix);
  Loader loader(data, o);
  std::vector<int64_t> per_corpus(3, 0);
  for (Batch& b : loader) {
    for (int64_t r = 0; r < b["input"].size(0); ++r) {
      const size_t corpus = reference.source_of(b.indices()[static_cast<size_t>(r)]);
      REQUIRE(b["corpus"][r].item<int64_t>() == static_cast<int64_t>(corpus));
      REQUIRE(b["input"][r][0].item<int64_t>() / 20000 == static_cast<int64_t>(corpus));
      ++per_corpus[corpus];
    }
  }
  std::filesystem::remove_all(dir);
  const std::vector<double> p{0.5, 0.3, 0.2};
  for (size_t k = 0; k < 3; ++k) {
    INFO("corpus " << k << ": " << per_corpus[k] << " of 3000 windows");
    CHECK(std::abs(per_corpus[k] - 3000 * p[k]) < 5 * std::sqrt(3000 * p[k] * (1 - p[k])));
  }
}

}  // namespace test_mixture
