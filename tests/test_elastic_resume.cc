// Resuming an epoch on another world size (include/mploader/elastic.h): map-style datasets under
// DistributedSampler and DistributedBucketSampler, and a TokenStream, checkpointed on 4 ranks and
// finished on 2, and on 2 then 3 then 2, with workers killed: every sample exactly once, equal
// steps on the ranks of each phase. Plus the plan of the rest, and the states a merge refuses.
#include "elastic_harness.h"
#include "loader/state_json.h"
#include "sampler/elastic_plan.h"
#include "test_datasets.h"

#include <mploader/bucket_sampler.h>
#include <mploader/distributed_sampler.h>
#include <mploader/errors.h>
#include <mploader/token_stream.h>

#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace test_elastic_resume {

using namespace mploader;
using elastic_harness::check_equal_steps;
using elastic_harness::check_resizes;
using elastic_harness::MakeLoader;
using elastic_harness::Phase;
using elastic_harness::run_phase;
using testing_datasets::CountingDataset;

namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path = fs::temp_directory_path() /
                  ("mploader-elastic-" + std::to_string(getpid()) + "-" + std::to_string(++made));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
  static inline int made = 0;
};

LoaderOptions base_options(const TempDir& crashes) {
  LoaderOptions o;
  o.num_workers = 2;
  o.max_restarts_per_epoch = 2;
  o.crash_dir = crashes.path.string();
  o.timeout = std::chrono::seconds(60);
  return o;
}

std::vector<int64_t> lengths_of(int64_t n) {
  std::vector<int64_t> lengths;
  for (int64_t i = 0; i < n; ++i) lengths.push_back(1 + (i * 37) % 23);
  return lengths;
}

}  // namespace

TEST_CASE("elastic resume: the rest is cut so that every rank takes the same steps", "[elastic]") {
  using mploader::detail::resume_by_groups;
  using mploader::detail::resume_by_samples;
  for (int64_t left : {1, 7, 64, 65, 97, 200}) {
    for (int64_t world : {1, 2, 3, 5}) {
      if (left < world) continue;
      std::vector<int64_t> remaining(static_cast<size_t>(left));
      for (int64_t i = 0; i < left; ++i) remaining[static_cast<size_t>(i)] = 3 * i;
      std::map<int64_t, int> seen;
      size_t steps = SIZE_MAX;
      for (int64_t r = 0; r < world; ++r) {
        const auto rest = resume_by_samples(remaining, world, r, 8, false);
        if (steps == SIZE_MAX) steps = rest.batches.size();
        INFO(left << " left, rank " << r << " of " << world);
        CHECK(rest.batches.size() == steps);
        CHECK(rest.padded == 0);
        for (const auto& b : rest.batches) {
          CHECK((!b.empty() && b.size() <= 8));
          for (int64_t p : b) ++seen[p];
        }
      }
      CHECK(static_cast<int64_t>(seen.size()) == left);
      for (const auto& [p, count] : seen) CHECK(count == 1);
    }
  }
  // Groups: 5 batches over 3 ranks; the ranks with one fewer split their largest.
  const std::vector<std::vector<int64_t>> groups = {{0, 1, 2}, {3}, {4, 5}, {6, 7, 8, 9}, {10}};
  size_t total = 0;
  for (int64_t r = 0; r < 3; ++r) {
    const auto rest = resume_by_groups(groups, 3, r);
    CHECK(rest.batches.size() == 2);
    for (const auto& b : rest.batches) total += b.size();
  }
  CHECK(total == 11);
}

TEST_CASE("elastic resume: a rank's positions save as a few runs and read back the same",
          "[elastic]") {
  namespace sj = mploader::detail::state_json;
  mploader::detail::SequenceSet positions(100000);
  for (uint64_t p = 3; p < 80000; p += 4) positions.insert(p);  // rank 3 of 4, in order
  positions.insert_range(90000, 90100);
  positions.insert(95000);
  const auto runs = sj::position_runs(positions);
  CHECK(runs.size() == 3);
  CHECK(sj::positions_from(runs, positions.size(), "delivered") == positions);
  CHECK(positions.count() == 20000 + 100 + 1);
  // Runs that leave the epoch, overlap backwards or step 0 are refused.
  for (const char* bad : {"[[99999, 2, 2]]", "[[5, 1, 3], [2, 1, 1]]", "[[0, 0, 4]]",
                          "[[0, 1]]", "{}"}) {
    CHECK_THROWS_AS(sj::positions_from(nlohmann::json::parse(bad), 100000, "delivered"),
                    OptionError);
  }
}

TEST_CASE("elastic resume: DistributedSampler, 4 ranks to 2 and 2 to 3", "[elastic][process]") {
  TempDir crashes;
  const int64_t n = 237;
  const MakeLoader make = [&](int64_t world, int64_t rank) {
    LoaderOptions o = base_options(crashes);
    o.batch_size = 6;
    o.sampler = std::make_shared<DistributedSampler>(world, rank, /*shuffle=*/true, /*seed=*/4);
    o.in_order = rank % 2 == 0;  // either delivery order saves a state that merges
    return std::make_unique<Loader>(std::make_shared<CountingDataset>(n), o);
  };
  // 237 samples: 4 ranks pad to 240 and 2 to 238, at the end of the epoch's order, which the
  // ranks that stop early never reach.
  check_resizes(make, n, 1, 4);
}

TEST_CASE("elastic resume: DistributedSampler with the Loader's drop_last, 4 ranks to 2",
          "[elastic][process]") {
  TempDir crashes;
  const int64_t n = 1000, batch = 16;
  const MakeLoader make = [&](int64_t world, int64_t rank) {
    LoaderOptions o = base_options(crashes);
    o.batch_size = batch;
    o.drop_last = true;  // each of 4 ranks has 250 positions: 15 batches, 10 left out
    o.sampler = std::make_shared<DistributedSampler>(world, rank, /*shuffle=*/true, /*seed=*/7);
    return std::make_unique<Loader>(std::make_shared<CountingDataset>(n), o);
  };
  std::map<int64_t, int> seen;
  const Phase four = run_phase(make, 4, 0, "", 6, seen);
  check_equal_steps(four);
  std::string job;
  REQUIRE_NOTHROW(job = four.job());
  const Phase two = run_phase(make, 2, 0, job, SIZE_MAX, seen);
  check_equal_steps(two);
  // No sample twice; the positions the first run's drop_last would have left out are among
  // the rest, and only the 2 ranks' own last short batches are left out now.
  for (const auto& [index, count] : seen) CHECK(count == 1);
  CHECK(static_cast<int64_t>(seen.size()) > n - 2 * batch);
}

TEST_CASE("elastic resume: DistributedBucketSampler, 4 ranks to 2 and 2 to 3",
          "[elastic][process]") {
  TempDir crashes;
  const int64_t n = 300;
  const MakeLoader make = [&](int64_t world, int64_t rank) {
    LoaderOptions o = base_options(crashes);
    BucketOptions bo;
    bo.max_tokens = 60;
    bo.seed = 2;
    bo.uneven = BucketOptions::Uneven::kDrop;  // dropped batches are what a resume delivers
    o.batch_sampler = std::make_shared<DistributedBucketSampler>(lengths_of(n), bo, world, rank);
    return std::make_unique<Loader>(std::make_shared<CountingDataset>(n), o);
  };
  check_resizes(make, n, 2, 3);
  // A resumed batch is one of the sampler's batches, or part of one: within the budget.
  std::map<int64_t, int> seen;
  const auto four = run_phase(make, 4, 0, "", 3, seen);
  auto loader = make(2, 1);
  loader->load_state_dict(four.job());
  const std::vector<int64_t> lengths = lengths_of(n);
  for (Batch& b : *loader) {
    int64_t longest = 0;
    for (int64_t i : b.indices()) longest = std::max(longest, lengths[static_cast<size_t>(i)]);
    CHECK(longest * static_cast<int64_t>(b.size()) <= 60);
  }
}

TEST_CASE("elastic resume: TokenStream, 4 ranks to 2 and 2 to 3", "[elastic][process]") {
  TempDir dir;
  std::vector<std::string> files;
  for (int f = 0; f < 3; ++f) {
    files.push_back((dir.path / ("part" + std::to_string(f) + ".bin")).string());
    std::ofstream out(files.back(), std::ios::binary);
    for (int i = 0; i < 1000 + 170 * f; ++i) {
      const uint16_t id = static_cast<uint16_t>(i);
      out.write(reinterpret_cast<const char*>(&id), sizeof id);
    }
  }
  TokenStreamOptions to;
  to.context = 7;
  to.windows_per_shard = 20;
  const auto data = std::make_shared<TokenStream>(files, to);
  const MakeLoader make = [&](int64_t world, int64_t rank) {
    LoaderOptions o = base_options(dir);
    o.batch_size = 5;
    o.shuffle = true;
    o.shuffle_buffer = 9;
    o.seed = 8;
    o.world_size = world;
    o.rank = rank;
    return std::make_unique<Loader>(std::make_shared<TokenStream>(files, to), o);
  };
  check_resizes(make, static_cast<int64_t>(data->size()), 1, 6);
}

TEST_CASE("elastic resume: states that do not make one job are refused, naming why",
          "[elastic][process]") {
  TempDir crashes;
  const MakeLoader make = [&](int64_t world, int64_t rank) {
    LoaderOptions o = base_options(crashes);
    o.num_workers = 0;
    o.batch_size = 4;
    o.sampler = std::make_shared<DistributedSampler>(world, rank, true, 4);
    return std::make_unique<Loader>(std::make_shared<CountingDataset>(100), o);
  };
  std::map<int64_t, int> seen;
  const auto four = run_phase(make, 4, 0, "", 3, seen);
  const auto later = run_phase(make, 4, 0, "", 4, seen);
  CHECK_THROWS_WITH(merge_loader_states({four.states[0], four.states[1], four.states[3]}),
                    Catch::Contains("no state of rank(s) 2 was given"));
  CHECK_THROWS_WITH(merge_loader_states({four.states[0], four.states[1], four.states[1],
                                         four.states[2]}),
                    Catch::Contains("rank 1's state was given twice"));
  CHECK_THROWS_WITH(merge_loader_states({four.states[0], four.states[1], four.states[2],
                                         later.states[3]}),
                    Catch::Contains("rank 3 had taken 4 steps of epoch 0 and rank 0 3") &&
                        Catch::Contains("different checkpoints"));
  // One rank's state on another world size points to the merge.
  auto two = make(2, 0);
  CHECK_THROWS_WITH(two->load_state_dict(four.states[0]),
                    Catch::Contains("rank 0 of 4's") && Catch::Contains("merge_loader_states"));
  // A job state of another order: another seed.
  LoaderOptions o = base_options(crashes);
  o.num_workers = 0;
  o.batch_size = 4;
  o.seed = 9;
  o.sampler = std::make_shared<DistributedSampler>(2, 0, true, 5);
  Loader other(std::make_shared<CountingDataset>(100), o);
  CHECK_THROWS_WITH(other.load_state_dict(four.job()),
                    Catch::Contains("other options that change the epoch's order"));
  Loader bigger(std::make_shared<CountingDataset>(101), o);
  CHECK_THROWS_WITH(bigger.load_state_dict(four.job()),
                    Catch::Contains("samples 100 then, 101 now"));
  // A sampler that cannot resume elsewhere: its states carry no positions.
  LoaderOptions plain = base_options(crashes);
  plain.num_workers = 0;
  plain.batch_size = 4;
  Loader single(std::make_shared<CountingDataset>(100), plain);
  CHECK_THROWS_WITH(merge_loader_states({single.state_dict()}),
                    Catch::Contains("cannot resume on another world size"));
  CHECK_THROWS_WITH(single.load_state_dict(four.job()),
                    Catch::Contains("this Loader cannot resume on another world size"));
  // Damaged text.
  std::string job = four.job();
  job[job.size() / 2] ^= 1;
  CHECK_THROWS_AS(two->load_state_dict(job), OptionError);
}

}  // namespace test_elastic_resume
