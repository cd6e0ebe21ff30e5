// Quarantine (LoaderOptions::quarantine_after): samples that kill their worker every time are
// left out after the second death, the epoch goes on unattended, and every other sample still
// arrives exactly once; the quarantined samples are in stats(), the crash reports and
// state_dict(), and a resumed loader leaves them out without a worker dying on them.
#include "crash_test_support.h"
#include "loader/batch_list.h"
#include "loader/resume_state.h"

#include <catch2/catch.hpp>

#include <signal.h>

#include <algorithm>
#include <fstream>
#include <numeric>
#include <set>

namespace test_quarantine {

using namespace mploader;
using testing_datasets::CountingDataset;

namespace {

// CountingDataset whose poison samples raise SIGSEGV in get(), every time, as a decoder that
// segfaults on one file does.
class PoisonDataset : public CountingDataset {
 public:
  PoisonDataset(size_t n, std::set<int64_t> poison)
      : CountingDataset(n), poison_(std::move(poison)) {}
  Sample get(int64_t index) override {
    if (poison_.count(index) != 0) raise(SIGSEGV);
    return CountingDataset::get(index);
  }

 private:
  std::set<int64_t> poison_;
};

LoaderOptions quarantine_options(int64_t batch_size) {
  LoaderOptions o = crash_testing::crash_options(2, crash_testing::fresh_dir());
  o.batch_size = batch_size;
  o.max_restarts_per_epoch = 1;  // six deaths need it once at a time: the rest is given back
  o.quarantine_after = 2;
  return o;
}

// Runs the rest of the loader's epoch; counts each index delivered and checks every row's
// label against its index.
void deliver_epoch(Loader& loader, std::vector<int>& seen, std::vector<size_t>* sizes = nullptr) {
  while (auto b = loader.next()) {
    const at::Tensor labels = (*b)["label"];
    for (size_t i = 0; i < b->size(); ++i) {
      const int64_t index = b->indices()[i];
      REQUIRE(labels[static_cast<int64_t>(i)].item<int64_t>() == index);
      ++seen.at(static_cast<size_t>(index));
    }
    if (sizes != nullptr) sizes->push_back(b->size());
  }
}

std::set<int64_t> quarantined_indices(const LoaderStats& stats) {
  std::set<int64_t> out;
  for (const QuarantinedSample& q : stats.quarantined) out.insert(q.index);
  return out;
}

}  // namespace

TEST_CASE("quarantine: 3 poison samples among 10,000, the epoch ends unattended, the rest once",
          "[quarantine][process]") {
  const size_t n = 10000;
  const std::set<int64_t> poison = {1234, 5678, 9999};
  LoaderOptions o = quarantine_options(50);
  Loader loader(std::make_shared<PoisonDataset>(n, poison), o);
  std::vector<int> seen(n, 0);
  std::vector<size_t> sizes;
  deliver_epoch(loader, seen, &sizes);

  for (size_t i = 0; i < n; ++i) {
    REQUIRE(seen[i] == (poison.count(static_cast<int64_t>(i)) != 0 ? 0 : 1));
  }
  REQUIRE(sizes.size() == 200);  // the batches that held one are delivered one sample shorter
  CHECK(std::count(sizes.begin(), sizes.end(), size_t{49}) == 3);

  const LoaderStats stats = loader.stats();
  REQUIRE(quarantined_indices(stats) == poison);
  REQUIRE(stats.quarantined.size() == 3);
  for (const QuarantinedSample& q : stats.quarantined) {
    CHECK(q.deaths == 2);
    CHECK(q.epoch == 0);
    CHECK(q.cause == "segfault");
    REQUIRE_FALSE(q.report_path.empty());
    std::ifstream in(q.report_path);
    const nlohmann::json report = nlohmann::json::parse(in, nullptr, false);
    REQUIRE(report.is_object());
    const nlohmann::json& section = report["details"]["quarantine"];
    CHECK(section["sample_index"] == q.index);
    CHECK(section["deaths_on_sample"] == 2);
    CHECK(section["quarantined"] == true);
    bool listed = false;
    for (const auto& s : section["samples"]) listed |= s["index"] == q.index;
    CHECK(listed);
  }
  // Skipped as report_skipped_sample() would have it, with the cause, once each.
  CHECK(stats.skipped_samples == 3);
  REQUIRE(stats.skipped.size() == 3);
  for (const SkippedSample& s : stats.skipped) {
    CHECK(poison.count(s.index) == 1);
    CHECK(s.substitute == -1);
    CHECK_THAT(s.reason, Catch::Contains("quarantined") && Catch::Contains("segfault"));
  }

  SECTION("a resumed loader leaves them out with no restart allowed and no worker dying") {
    const std::string state = loader.state_dict();  // names epoch 1, from its start
    CHECK_THAT(state, Catch::Contains("\"quarantined\""));
    LoaderOptions fresh = crash_testing::crash_options(2, crash_testing::fresh_dir());
    fresh.batch_size = 50;  // no quarantine, no restarts: a death would raise WorkerCrashed
    Loader resumed(std::make_shared<PoisonDataset>(n, poison), fresh);
    resumed.load_state_dict(state);
    std::vector<int> again(n, 0);
    deliver_epoch(resumed, again);
    for (size_t i = 0; i < n; ++i) {
      REQUIRE(again[i] == (poison.count(static_cast<int64_t>(i)) != 0 ? 0 : 1));
    }
    const LoaderStats resumed_stats = resumed.stats();
    CHECK(quarantined_indices(resumed_stats) == poison);
    CHECK(resumed_stats.skipped_samples == 3);
    for (const SkippedSample& s : resumed_stats.skipped) CHECK(s.epoch == 1);
  }
}

TEST_CASE("quarantine: a batch left with no sample is skipped, in order or not",
          "[quarantine][process]") {
  const std::set<int64_t> poison = {10, 40};  // apart: one death at a time
  for (bool in_order : {true, false}) {
    LoaderOptions o = quarantine_options(1);
    o.in_order = in_order;
    // Out of order, batch 40 may be read while batch 10 still waits: two first deaths at once,
    // each needing a free restart until its sample is quarantined.
    o.max_restarts_per_epoch = 2;
    Loader loader(std::make_shared<PoisonDataset>(60, poison), o);
    std::vector<int> seen(60, 0);
    std::vector<size_t> sizes;
    deliver_epoch(loader, seen, &sizes);
    CHECK(sizes.size() == 58);
    for (size_t i = 0; i < 60; ++i) {
      REQUIRE(seen[i] == (poison.count(static_cast<int64_t>(i)) != 0 ? 0 : 1));
    }
    CHECK(quarantined_indices(loader.stats()) == poison);
    // The next epoch leaves them out before any worker sees them.
    std::fill(seen.begin(), seen.end(), 0);
    deliver_epoch(loader, seen);
    CHECK(std::accumulate(seen.begin(), seen.end(), 0) == 58);
    CHECK(loader.stats().skipped_samples == 4);
  }
}

TEST_CASE("quarantine: off (the default), one poison sample uses up the restarts",
          "[quarantine][process]") {
  LoaderOptions o = quarantine_options(10);
  o.quarantine_after = 0;
  o.max_restarts_per_epoch = 3;
  Loader loader(std::make_shared<PoisonDataset>(300, std::set<int64_t>{15}), o);
  CHECK_THROWS_WITH(
      [&] {
        while (loader.next()) {
        }
      }(),
      Catch::Contains("max_restarts_per_epoch = 3") && Catch::Contains("Dataset::get(15)"));
  CHECK(loader.stats().quarantined.empty());
}

TEST_CASE("quarantine: past max_quarantined_per_epoch the crash is raised, naming the cap",
          "[quarantine][process]") {
  LoaderOptions o = quarantine_options(10);
  o.max_quarantined_per_epoch = 2;
  Loader loader(std::make_shared<PoisonDataset>(300, std::set<int64_t>{15, 115, 215}), o);
  try {
    while (loader.next()) {
    }
    FAIL("expected WorkerCrashed");
  } catch (const WorkerCrashed& e) {
    CHECK(e.cause() == DeathCause::kSegfault);
    CHECK_THAT(std::string(e.what()), Catch::Contains("max_quarantined_per_epoch = 2") &&
                                          Catch::Contains("max_restarts_per_epoch = 1"));
  }
  CHECK(quarantined_indices(loader.stats()) == std::set<int64_t>{15, 115});
}

TEST_CASE("quarantine: a poison sample 0 names max_batch_bytes, which lets the epoch run",
          "[quarantine][process]") {
  LoaderOptions o = quarantine_options(10);
  const auto data = std::make_shared<PoisonDataset>(200, std::set<int64_t>{0});
  // Sizing the slots reads sample 0 in a worker: it dies before any epoch can quarantine it.
  CHECK_THROWS_WITH(Loader(data, o), Catch::Contains("to size the ring slots died") &&
                                         Catch::Contains("set LoaderOptions::max_batch_bytes"));
  o.max_batch_bytes = 1 << 20;  // no probe: the epoch meets sample 0 and quarantines it
  Loader loader(data, o);
  std::vector<int> seen(200, 0);
  deliver_epoch(loader, seen);
  for (size_t i = 0; i < seen.size(); ++i) REQUIRE(seen[i] == (i == 0 ? 0 : 1));
  CHECK(quarantined_indices(loader.stats()) == std::set<int64_t>{0});
}

TEST_CASE("quarantine: the options are checked", "[quarantine][options]") {
  auto refusal = [](LoaderOptions o) -> std::pair<std::string, std::string> {
    try {
      Loader loader(std::make_shared<CountingDataset>(10), o);
    } catch (const OptionError& e) {
      return {e.option(), e.what()};
    }
    return {"", ""};
  };
  LoaderOptions o = quarantine_options(2);
  o.quarantine_after = -1;
  CHECK(refusal(o).first == "quarantine_after");
  o.quarantine_after = 2;
  o.max_restarts_per_epoch = 0;
  auto r = refusal(o);
  CHECK(r.first == "quarantine_after");
  CHECK_THAT(r.second, Catch::Contains("max_restarts_per_epoch"));
  o.max_restarts_per_epoch = 1;
  o.num_workers = 0;
  r = refusal(o);
  CHECK(r.first == "quarantine_after");
  CHECK_THAT(r.second, Catch::Contains("num_workers"));
  o.num_workers = 1;
  o.max_quarantined_per_epoch = 0;
  CHECK(refusal(o).first == "max_quarantined_per_epoch");
}

TEST_CASE("quarantine: the state keeps the samples, and a state without them loads as before",
          "[quarantine][resume]") {
  mploader::detail::ResumeState s;
  s.epoch = 3;
  s.plan = mploader::detail::fingerprint(mploader::detail::ListedBatches({{0, 1}, {2, 3}}), 4);
  s.delivered.assign(2);
  s.delivered.insert(0);
  const std::string plain = mploader::detail::to_text(s);
  CHECK(plain.find("quarantined") == std::string::npos);  // the format states had before
  CHECK(mploader::detail::from_text(plain).quarantined.empty());
  s.quarantined.push_back(QuarantinedSample{2, 3, 2, "segfault", "/tmp/x.json"});
  const mploader::detail::ResumeState back = mploader::detail::from_text(mploader::detail::to_text(s));
  REQUIRE(back.quarantined.size() == 1);
  CHECK(back.quarantined[0].index == 2);
  CHECK(back.quarantined[0].epoch == 3);
  CHECK(back.quarantined[0].deaths == 2);
  CHECK(back.quarantined[0].cause == "segfault");
  s.quarantined[0].index = 4;  // beyond the dataset
  CHECK_THROWS_WITH(mploader::detail::from_text(mploader::detail::to_text(s)),
                    Catch::Contains("names sample 4 of a dataset of 4 samples"));
}

}  // namespace test_quarantine
