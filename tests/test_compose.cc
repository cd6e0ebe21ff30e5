// ConcatDataset and Subset (mploader/compose.h): PyTorch's index mapping, the source field, every
// loading path (get, in place, with and without workers, spawn), skip reports in the composed
// index space, and each bad input.
#include "error_text.h"
#include "crash_test_support.h"
#include "datasets/compose_recipes.h"

#include <mploader/compose.h>
#include <mploader/registry.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <random>
#include <set>
#include <sstream>
#include <ostream>

namespace test_compose {

using namespace mploader;
using testing_datasets::CountingDataset;

using testing_errors::option_error;

namespace {

// Sample i: "x" float [4] = base + i, "label" int64 = base + i, written in place. With
// `get_throws`, get() throws, so a batch that arrives was written in place.
class OffsetDataset : public Dataset {
 public:
  OffsetDataset(size_t n, int64_t base, bool get_throws)
      : n_(n), base_(base), get_throws_(get_throws) {}
  size_t size() const override { return n_; }
  std::optional<SampleLayout> sample_layout() const override {
    return SampleLayout{{"x", at::kFloat, {4}}, {"label", at::kLong, {}}};
  }
  Sample get(int64_t index) override {
    if (get_throws_) throw std::runtime_error("get() must not be called");
    return Dataset::get(index);
  }
  void write(int64_t index, SampleWriter& out) override {
    std::fill_n(out.data<float>(0), 4, static_cast<float>(base_ + index));
    *out.data<int64_t>(1) = base_ + index;
  }
  std::optional<DatasetRecipe> recipe() const override {
    return DatasetRecipe{"compose-offset", std::to_string(n_) + " " + std::to_string(base_) +
                                               " " + std::to_string(get_throws_ ? 1 : 0)};
  }

 private:
  size_t n_;
  int64_t base_;
  bool get_throws_;
};

MPLOADER_REGISTER_DATASET("compose-offset", [](const std::string& config) {
  std::istringstream in(config);
  size_t n;
  int64_t base;
  int get_throws;
  in >> n >> base >> get_throws;
  return std::make_shared<OffsetDataset>(n, base, get_throws != 0);
});

// OffsetDataset (base 0) whose indices that are multiples of 3 report a skip, substituted by
// the next index (or none, at the end).
class SkippingDataset : public OffsetDataset {
 public:
  explicit SkippingDataset(size_t n) : OffsetDataset(n, 0, false) {}
  void write(int64_t index, SampleWriter& out) override {
    OffsetDataset::write(index, out);
    if (index % 3 == 0) {
      const int64_t next = index + 1 < static_cast<int64_t>(size()) ? index + 1 : -1;
      report_skipped_sample(index, next, "file-" + std::to_string(index), "corrupt");
    }
  }
};

class NoRecipe : public CountingDataset {
 public:
  using CountingDataset::CountingDataset;
  std::optional<DatasetRecipe> recipe() const override { return std::nullopt; }
};

using Sources = std::vector<std::shared_ptr<Dataset>>;

LoaderOptions options(int64_t workers, int64_t batch) {
  LoaderOptions o;
  o.num_workers = workers;
  o.batch_size = batch;
  o.crash_dir = "/tmp/mploader-test-crashes";
  return o;
}

// One row of a batch: its index in the loader's dataset, its label, x[3], its source or -1.
struct Row {
  int64_t index;
  int64_t label;
  float x;
  int64_t source;
  bool operator==(const Row& o) const {
    return index == o.index && label == o.label && x == o.x && source == o.source;
  }
};
std::ostream& operator<<(std::ostream& out, const Row& r) {
  return out << "{index " << r.index << ", label " << r.label << ", x " << r.x << ", source "
             << r.source << "}";
}

// Every row of an epoch, in order.
std::vector<Row> rows_of(std::shared_ptr<Dataset> data, const LoaderOptions& o) {
  Loader loader(std::move(data), o);
  std::vector<Row> rows;
  for (Batch& b : loader) {
    for (size_t i = 0; i < b.size(); ++i) {
      const int64_t source = b.tensors().contains("source") ? b["source"][i].item<int64_t>() : -1;
      rows.push_back(Row{b.indices()[i], b["label"][i].item<int64_t>(),
                         b["x"][i][3].item<float>(), source});
    }
  }
  return rows;
}

}  // namespace

TEST_CASE("compose: ConcatDataset maps indices as PyTorch, empty sources included", "[compose]") {
  // PyTorch: ConcatDataset of sizes [3, 0, 2, 0, 4] has cumulative_sizes [3, 3, 5, 5, 9] and
  // index i -> (source, local): (0,0) (0,1) (0,2) (2,0) (2,1) (4,0) (4,1) (4,2) (4,3).
  Sources sources;
  for (size_t n : {3, 0, 2, 0, 4}) sources.push_back(std::make_shared<CountingDataset>(n));
  ConcatDataset concat(sources);
  CHECK(concat.size() == 9);
  CHECK(concat.num_sources() == 5);
  CHECK(concat.cumulative_sizes() == std::vector<int64_t>{3, 3, 5, 5, 9});
  CHECK(concat.source_size(1) == 0);
  CHECK(concat.source_size(4) == 4);
  CHECK(concat.offset(0) == 0);
  CHECK(concat.offset(4) == 5);
  const std::vector<std::pair<size_t, int64_t>> expected{{0, 0}, {0, 1}, {0, 2}, {2, 0}, {2, 1},
                                                         {4, 0}, {4, 1}, {4, 2}, {4, 3}};
  for (int64_t i = 0; i < 9; ++i) {
    INFO("index " << i);
    const ConcatDataset::Location at = concat.locate(i);
    CHECK(std::make_pair(at.source, at.index) == expected[static_cast<size_t>(i)]);
    CHECK(concat.get(i)["label"].item<int64_t>() == expected[static_cast<size_t>(i)].second);
  }
  CHECK_THROWS_AS(concat.locate(9), OptionError);
  CHECK_THROWS_AS(concat.locate(-1), OptionError);
  CHECK_THROWS_AS(concat.get(9), OptionError);
  // Only empty sources: size 0, and no layout to declare.
  ConcatDataset empty(Sources{std::make_shared<CountingDataset>(0)});
  CHECK(empty.size() == 0);
  CHECK_FALSE(empty.sample_layout());
}

TEST_CASE("compose: a Loader over two different datasets gives each row and its source",
          "[compose][process]") {
  // Counting has no layout, so every sample comes from get(): label i, then 1000 + i.
  auto concat = std::make_shared<ConcatDataset>(
      Sources{std::make_shared<CountingDataset>(10),
              std::make_shared<OffsetDataset>(7, 1000, false)},
      "source");
  CHECK_FALSE(concat->sample_layout());
  for (int64_t workers : {0, 2}) {
    INFO(workers << " workers");
    const std::vector<Row> rows = rows_of(concat, options(workers, 4));
    REQUIRE(rows.size() == 17);
    for (int64_t i = 0; i < 17; ++i) {
      INFO("row " << i);
      const bool first = i < 10;
      const int64_t label = first ? i : 1000 + (i - 10);
      CHECK(rows[static_cast<size_t>(i)] ==
            Row{i, label, static_cast<float>(label), first ? 0 : 1});
    }
  }
}

TEST_CASE("compose: a Subset in shuffled order, with repeats, over a ConcatDataset",
          "[compose][process]") {
  auto concat = std::make_shared<ConcatDataset>(
      Sources{std::make_shared<CountingDataset>(10),
              std::make_shared<OffsetDataset>(7, 1000, false)},
      "source");
  std::vector<int64_t> order(17);
  for (int64_t i = 0; i < 17; ++i) order[static_cast<size_t>(i)] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937(7));
  order.push_back(order[0]);
  order.push_back(16);  // the last index
  auto subset = std::make_shared<Subset>(concat, order);
  REQUIRE(subset->size() == 19);
  CHECK(subset->source_index(18) == 16);
  CHECK_THROWS_AS(subset->get(19), OptionError);
  for (int64_t workers : {0, 2}) {
    INFO(workers << " workers");
    const std::vector<Row> rows = rows_of(subset, options(workers, 5));
    REQUIRE(rows.size() == order.size());
    for (size_t i = 0; i < order.size(); ++i) {
      INFO("row " << i << ", concatenated index " << order[i]);
      const bool first = order[i] < 10;
      const int64_t label = first ? order[i] : 1000 + (order[i] - 10);
      CHECK(rows[i] ==
            Row{static_cast<int64_t>(i), label, static_cast<float>(label), first ? 0 : 1});
    }
  }
}

TEST_CASE("compose: sources of one layout are written in place, get() never called",
          "[compose][process]") {
  // get() throws in every source: a batch that arrives was written through write().
  const Sources sources{std::make_shared<OffsetDataset>(5, 0, true),
                        std::make_shared<OffsetDataset>(0, 50, true),
                        std::make_shared<OffsetDataset>(6, 100, true)};
  for (const std::string field : {"", "source"}) {
    INFO("source field '" << field << "'");
    auto concat = std::make_shared<ConcatDataset>(sources, field);
    REQUIRE(concat->sample_layout());
    CHECK(concat->sample_layout()->size() == (field.empty() ? 2 : 3));
    std::vector<int64_t> order{10, 0, 5, 4, 6, 6, 1};
    auto subset = std::make_shared<Subset>(concat, order);
    for (int64_t workers : {0, 2}) {
      INFO(workers << " workers");
      // Batches of 3 over 11: [0,3) and [3,6) span a source boundary or not, [9,11) one source.
      const std::vector<Row> rows = rows_of(concat, options(workers, 3));
      REQUIRE(rows.size() == 11);
      for (int64_t i = 0; i < 11; ++i) {
        const int64_t label = i < 5 ? i : 100 + (i - 5);
        const int64_t source = field.empty() ? -1 : (i < 5 ? 0 : 2);
        CHECK(rows[static_cast<size_t>(i)] == Row{i, label, static_cast<float>(label), source});
      }
      const std::vector<Row> picked = rows_of(subset, options(workers, 4));
      REQUIRE(picked.size() == order.size());
      for (size_t i = 0; i < order.size(); ++i) {
        const int64_t label = rows[static_cast<size_t>(order[i])].label;
        CHECK(picked[i].label == label);
      }
    }
  }
}

TEST_CASE("compose: skipped samples are reported in the composed index space",
          "[compose][process]") {
  // Concat{Offset(4), Skipping(6)}: Skipping's 0 and 3 (subst. 1 and 4) are 4 and 7 (5 and 8).
  auto skipping = std::make_shared<SkippingDataset>(6);
  auto concat = std::make_shared<ConcatDataset>(
      Sources{std::make_shared<OffsetDataset>(4, 0, false), skipping});
  // Subset of Skipping {5, 3, 0, 1}: 3 is row 1 (substitute 4, outside: -1), 0 is row 2
  // (substitute 1: row 3).
  auto subset = std::make_shared<Subset>(skipping, std::vector<int64_t>{5, 3, 0, 1});
  using Skip = std::pair<int64_t, int64_t>;
  for (int64_t workers : {0, 1}) {
    INFO(workers << " workers");
    for (int64_t batch : {1, 3}) {
      INFO("batch size " << batch);
      Loader on_concat(concat, options(workers, batch));
      for (Batch& b : on_concat) (void)b;
      std::set<Skip> skips;
      for (const SkippedSample& s : on_concat.stats().skipped) skips.emplace(s.index, s.substitute);
      CHECK(skips == std::set<Skip>{{4, 5}, {7, 8}});
      Loader on_subset(subset, options(workers, batch));
      for (Batch& b : on_subset) (void)b;
      skips.clear();
      for (const SkippedSample& s : on_subset.stats().skipped) skips.emplace(s.index, s.substitute);
      CHECK(skips == std::set<Skip>{{1, -1}, {2, 3}});
    }
  }
}

TEST_CASE("compose: spawn and forkserver rebuild them from their sources' recipes",
          "[compose][spawn][process]") {
  auto inner = std::make_shared<Subset>(std::make_shared<OffsetDataset>(20, 500, true),
                                        std::vector<int64_t>{19, 3, 3, 4, 5, 6, 0});
  auto concat = std::make_shared<ConcatDataset>(
      Sources{std::make_shared<OffsetDataset>(4, 0, true), inner}, "source");
  REQUIRE(concat->recipe());
  CHECK(concat->recipe()->factory == "mploader.concat");
  CHECK(inner->recipe()->factory == "mploader.subset");
  CHECK_THAT(inner->recipe()->config, Catch::Contains("\"19,3,3-6,0\""));
  LoaderOptions o = options(2, 3);
  const std::vector<Row> forked = rows_of(concat, o);
  REQUIRE(forked.size() == 11);
  CHECK(forked[4] == Row{4, 519, 519.0f, 1});
  CHECK(forked[10] == Row{10, 500, 500.0f, 1});
  for (StartMethod method : {StartMethod::kSpawn, StartMethod::kForkserver}) {
    o.start_method = method;
    o.crash_dir = crash_testing::fresh_dir();
    CHECK(rows_of(concat, o) == forked);
  }
}

TEST_CASE("compose: spawn is refused naming the source without a recipe", "[compose][spawn]") {
  LoaderOptions o = options(2, 4);
  o.start_method = StartMethod::kSpawn;
  auto concat = std::make_shared<ConcatDataset>(
      Sources{std::make_shared<CountingDataset>(3), std::make_shared<NoRecipe>(3)});
  CHECK_FALSE(concat->recipe());
  CHECK_THAT(option_error([&] { Loader loader(concat, o); }),
             Catch::StartsWith("dataset: ") && Catch::Contains("source 1 of the ConcatDataset") &&
                 Catch::Contains("NoRecipe") && Catch::Contains("start_method fork"));
  auto subset = std::make_shared<Subset>(concat, std::vector<int64_t>{0, 4});
  CHECK_THAT(option_error([&] { Loader loader(subset, o); }),
             Catch::Contains("the source of the Subset") &&
                 Catch::Contains("source 1 of the ConcatDataset"));
  // A split of 40,000 scattered rows (a recipe of about 230 KB, more than one environment
  // variable holds) reaches spawned workers whole: the spec travels in a memfd.
  std::vector<int64_t> split(40000);
  for (size_t i = 0; i < split.size(); ++i) split[i] = static_cast<int64_t>(i * 2);
  auto large = std::make_shared<Subset>(std::make_shared<CountingDataset>(80000), split);
  REQUIRE(large->recipe());
  CHECK(large->recipe()->config.size() > 128 * 1024);
  LoaderOptions spawned = o;
  spawned.batch_size = 1000;
  int64_t rows = 0;
  Loader loader(large, spawned);
  for (Batch& b : loader) {
    for (size_t i = 0; i < b.size(); ++i) {
      REQUIRE(b["label"][i].item<int64_t>() == split[static_cast<size_t>(b.indices()[i])]);
    }
    rows += static_cast<int64_t>(b.size());
  }
  CHECK(rows == 40000);
  // Contiguous, the same number of rows is one range.
  for (size_t i = 0; i < split.size(); ++i) split[i] = static_cast<int64_t>(i + 7);
  CHECK(std::make_shared<Subset>(std::make_shared<CountingDataset>(80000), split)
            ->recipe()->config.size() < 200);
}

TEST_CASE("compose: each bad input is an OptionError naming it and the fix", "[compose]") {
  auto three = std::make_shared<CountingDataset>(3);
  CHECK_THAT(option_error([] { ConcatDataset c(Sources{}); }),
             Catch::StartsWith("sources: ") && Catch::Contains("empty list"));
  CHECK_THAT(option_error([&] { ConcatDataset c(Sources{three, nullptr}); }),
             Catch::StartsWith("sources: ") && Catch::Contains("source 1 (of 2") &&
                 Catch::Contains("null"));
  // Sizes whose sum passes int64.
  class Huge : public CountingDataset {
   public:
    Huge() : CountingDataset(size_t{1} << 62) {}
  };
  auto huge = std::make_shared<Huge>();
  CHECK(ConcatDataset(Sources{huge, three}).size() == (size_t{1} << 62) + 3);
  CHECK_THAT(option_error([&] { ConcatDataset c(Sources{huge, huge, three}); }),
             Catch::StartsWith("sources: ") && Catch::Contains("int64") &&
                 Catch::Contains("source 1 (of 3") && Catch::Contains("4611686018427387904"));
  CHECK_THAT(option_error([] { Subset s(nullptr, {0}); }),
             Catch::StartsWith("source: ") && Catch::Contains("null"));
  CHECK_THAT(option_error([&] { Subset s(three, {0, 2, 3}); }),
             Catch::StartsWith("indices: ") && Catch::Contains("position 2 is 3") &&
                 Catch::Contains("[0, 3)"));
  CHECK_THAT(option_error([&] { Subset s(three, {-1}); }),
             Catch::StartsWith("indices: ") && Catch::Contains("position 0 is -1") &&
                 Catch::Contains("negative"));
  CHECK(Subset(three, {}).size() == 0);  // as PyTorch: an empty subset is a dataset of size 0
  // A source field that a source already has.
  ConcatDataset clash(Sources{three}, "label");
  CHECK_THAT(option_error([&] { clash.get(0); }),
             Catch::StartsWith("source_field: ") && Catch::Contains("'label'"));
  ConcatDataset clash_in_place(Sources{std::make_shared<OffsetDataset>(2, 0, true)}, "x");
  CHECK_THAT(option_error([&] { clash_in_place.sample_layout(); }),
             Catch::StartsWith("source_field: ") && Catch::Contains("'x'"));
}

TEST_CASE("compose: differing layouts fall back to get(), and samples that differ are named",
          "[compose][process]") {
  // Same tensors, one source declares a layout and the other not: get() for all.
  auto mixed = std::make_shared<ConcatDataset>(
      Sources{std::make_shared<OffsetDataset>(3, 0, false), std::make_shared<CountingDataset>(3)});
  CHECK_FALSE(mixed->sample_layout());
  CHECK(rows_of(mixed, options(0, 6)).size() == 6);
  // Different tensors: the batch that mixes them fails, naming what differs.
  auto different = std::make_shared<ConcatDataset>(
      Sources{std::make_shared<CountingDataset>(3),
              std::make_shared<testing_datasets::VarLenDataset>(3)});
  Loader loader(different, options(0, 6));
  CHECK_THROWS_WITH(loader.next(), Catch::Contains("only in sample 3: 'tokens'"));
}

TEST_CASE("compose: ConcatDataset and Subset pass a batch's prepare_batch on to their sources",
          "[compose]") {
  // A source that keeps the indices each prepare_batch() gave it.
  class Recording : public OffsetDataset {
   public:
    explicit Recording(size_t n) : OffsetDataset(n, 0, false) {}
    void prepare_batch(const int64_t* indices, size_t count) override {
      calls.emplace_back(indices, indices + count);
    }
    std::vector<std::vector<int64_t>> calls;
  };
  auto a = std::make_shared<Recording>(5), b = std::make_shared<Recording>(7);
  auto concat = std::make_shared<ConcatDataset>(std::vector<std::shared_ptr<Dataset>>{a, b});
  auto subset = std::make_shared<Subset>(concat, std::vector<int64_t>{11, 2, 6, 4, 5, 0});
  LoaderOptions lo;
  lo.batch_size = 3;
  lo.num_workers = 0;  // in this process, so the recordings can be read
  Loader loader(subset, lo);
  for (Batch& batch : loader) (void)batch;
  // Batches {11, 2, 6} and {4, 5, 0} of the concatenation: a's samples 2 | 4, 0; b's 6, 1 | 0.
  REQUIRE(a->calls == std::vector<std::vector<int64_t>>{{2}, {4, 0}});
  REQUIRE(b->calls == std::vector<std::vector<int64_t>>{{6, 1}, {0}});
}

}  // namespace test_compose
