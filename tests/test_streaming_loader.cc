// A Loader over a StreamingDataset with real worker processes: every sample once per epoch,
// each worker reading one run of the shard sequence, equal steps on every rank, resume with another num_workers,
// and 20 workers killed at random without a sample lost or repeated.
#include "loader/autotune.h"
#include "test_datasets.h"
#include "util/fnv1a.h"

#include <mploader/errors.h>
#include <mploader/loader.h>
#include <mploader/streaming.h>
#include <mploader/worker_info.h>

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <algorithm>
#include <map>
#include <random>
#include <set>

namespace test_streaming_loader {

using namespace mploader;

namespace {

// Shards of the given sizes; each sample says which index, shard, process and world it is.
class TaggedShards : public StreamingDataset {
 public:
  explicit TaggedShards(const std::vector<int64_t>& sizes, const std::string& prefix = "shard") {
    std::vector<ShardInfo> shards;
    for (size_t s = 0; s < sizes.size(); ++s) {
      shards.push_back({prefix + "-" + std::to_string(s), sizes[s]});
    }
    declare_shards(std::move(shards));
  }
  std::optional<SampleLayout> sample_layout() const override {
    return SampleLayout{{"index", at::kLong, {}}, {"shard", at::kLong, {}},
                        {"pid", at::kLong, {}}, {"world", at::kLong, {}}};
  }
  void write(int64_t index, SampleWriter& out) override {
    *out.data<int64_t>(0) = index;
    *out.data<int64_t>(1) = static_cast<int64_t>(locate(index).shard);
    *out.data<int64_t>(2) = getpid();
    const std::optional<WorkerInfo> info = worker_info();
    *out.data<int64_t>(3) = info ? info->world_size : -1;
  }
};

std::vector<int64_t> sizes_of(size_t shards, int64_t base) {
  std::vector<int64_t> sizes;
  for (size_t s = 0; s < shards; ++s) sizes.push_back(base + static_cast<int64_t>(s * 7 % 11));
  return sizes;
}

int64_t total(const std::vector<int64_t>& sizes) {
  int64_t n = 0;
  for (int64_t s : sizes) n += s;
  return n;
}

LoaderOptions stream_options(int64_t workers) {
  LoaderOptions o;
  o.batch_size = 4;
  o.num_workers = workers;
  o.shuffle = true;
  o.shuffle_buffer = 5;
  o.seed = 9;
  o.world_size = 1;
  o.timeout = std::chrono::seconds(60);
  return o;
}

// Every index of `batch`, checked against what the sample says of itself.
void collect(const Batch& batch, std::map<int64_t, int>& seen) {
  const at::Tensor index = batch["index"];
  for (size_t r = 0; r < batch.size(); ++r) {
    REQUIRE(index[static_cast<int64_t>(r)].item<int64_t>() == batch.indices()[r]);
    ++seen[batch.indices()[r]];
  }
}

void check_once(const std::map<int64_t, int>& seen, int64_t n) {
  CHECK(static_cast<int64_t>(seen.size()) == n);
  for (const auto& [index, count] : seen) {
    if (count != 1) FAIL("sample " << index << " came " << count << " times");
  }
}

}  // namespace

TEST_CASE("streaming loader: every sample once, and a shard shared by workers only at a border",
          "[stream]") {
  const auto sizes = sizes_of(9, 10);
  Loader loader(std::make_shared<TaggedShards>(sizes), stream_options(3));
  for (uint64_t epoch = 0; epoch < 2; ++epoch) {
    loader.set_epoch(epoch);
    std::map<int64_t, int> seen;
    std::map<int64_t, std::set<int64_t>> pids_of_shard;
    for (Batch& b : loader) {
      collect(b, seen);
      for (size_t r = 0; r < b.size(); ++r) {
        const int64_t row = static_cast<int64_t>(r);
        pids_of_shard[b["shard"][row].item<int64_t>()].insert(b["pid"][row].item<int64_t>());
        CHECK(b["world"][row].item<int64_t>() == 1);
      }
    }
    check_once(seen, total(sizes));
    size_t readers = 0;  // (shard, worker) pairs: 9 shards, and 2 borders between 3 workers
    for (const auto& [shard, pids] : pids_of_shard) readers += pids.size();
    CHECK(readers <= 9 + 2);
  }
}

TEST_CASE("streaming loader: two ranks take equal steps over disjoint samples", "[stream]") {
  const auto sizes = sizes_of(7, 15);
  for (UnevenRanks uneven : {UnevenRanks::kPad, UnevenRanks::kDrop}) {
    std::map<int64_t, int> seen;
    std::vector<size_t> steps;
    for (int64_t rank = 0; rank < 2; ++rank) {
      LoaderOptions o = stream_options(2);
      o.world_size = 2;
      o.rank = rank;
      o.uneven_ranks = uneven;
      Loader loader(std::make_shared<TaggedShards>(sizes), o);
      std::vector<std::vector<int64_t>> mine;
      const size_t planned = loader.batches_per_epoch();
      for (Batch& b : loader) {
        CHECK(b["world"][0].item<int64_t>() == 2);
        // A batch with a sample seen before repeats one of this rank's own (padding).
        const bool repeat = seen.count(b.indices()[0]) > 0;
        if (repeat) {
          CHECK(uneven == UnevenRanks::kPad);
          CHECK(std::find(mine.begin(), mine.end(), b.indices()) != mine.end());
        } else {
          collect(b, seen);
        }
        mine.push_back(b.indices());
      }
      CHECK(mine.size() == planned);
      steps.push_back(mine.size());
    }
    CHECK(steps[0] == steps[1]);
    for (const auto& [index, count] : seen) CHECK(count == 1);
    if (uneven == UnevenRanks::kPad) CHECK(static_cast<int64_t>(seen.size()) == total(sizes));
  }
}

TEST_CASE("streaming loader: resume with another num_workers gets exactly the samples left",
          "[stream]") {
  const auto sizes = sizes_of(8, 12);
  std::map<int64_t, int> seen;
  std::string state;
  size_t received = 0;
  {
    Loader first(std::make_shared<TaggedShards>(sizes), stream_options(3));
    first.set_epoch(4);
    for (Batch& b : first) {
      collect(b, seen);
      if (++received == 9) break;
    }
    state = first.state_dict();
  }
  const nlohmann::json saved = nlohmann::json::parse(state);
  REQUIRE(saved.contains("stream"));
  CHECK(saved["stream"]["streams"] == 3);
  int64_t delivered = 0;
  for (const auto& part : saved["stream"]["progress"]) {
    delivered += part["delivered"].get<int64_t>();
  }
  CHECK(delivered == static_cast<int64_t>(seen.size()));
  CHECK(saved["stream"]["progress"].size() == 3);

  Loader second(std::make_shared<TaggedShards>(sizes), stream_options(2));
  second.load_state_dict(state);
  CHECK(second.epoch() == 4);
  std::set<uint64_t> sequences;
  for (Batch& b : second) {
    collect(b, seen);
    CHECK(sequences.insert(b.sequence()).second);
  }
  check_once(seen, total(sizes));
  // The epoch after the resumed one is planned for the Loader's own two workers.
  second.set_epoch(5);
  std::map<int64_t, int> next;
  for (Batch& b : second) collect(b, next);
  check_once(next, total(sizes));
}

// The checksum a Loader state carries: FNV-1a over the text of its other fields.
std::string state_checksum(const nlohmann::json& body) {
  mploader::detail::Fnv1a h;
  h.add(body.dump());
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h.value()));
  return text;
}

TEST_CASE("streaming loader: a state over a million shards stays small, and old states load",
          "[stream]") {
  // One sample per shard, as TokenStream's windows_per_shard = 1 makes over a large file.
  const std::vector<int64_t> sizes(1000000, 1);
  LoaderOptions o = stream_options(0);
  o.batch_size = 64;
  std::map<int64_t, int> seen;
  std::string state;
  {
    Loader loader(std::make_shared<TaggedShards>(sizes), o);
    for (int b = 0; b < 3; ++b) collect(loader.next().value(), seen);
    state = loader.state_dict();
  }
  CHECK(state.size() < 16 * 1024);  // one record per shard was about 50 MB
  nlohmann::json saved = nlohmann::json::parse(state);
  const nlohmann::json& part = saved["stream"]["progress"].at(0);
  CHECK(part["units"] == 1000000);
  CHECK(part["delivered"] == 192);
  int64_t done = 0;
  for (const auto& run : part["done"]) done += run[1].get<int64_t>() - run[0].get<int64_t>();
  CHECK(done == 192);
  // A state of the old form (one record per shard, no "progress") still loads.
  saved["stream"].erase("progress");
  saved["stream"].erase("first_shard");
  saved["stream"]["shards"] = nlohmann::json::array();
  for (const auto& [index, count] : seen) {
    saved["stream"]["shards"].push_back({{"name", "shard-" + std::to_string(index)},
                                         {"samples", 1}, {"delivered", 1}});
  }
  saved.erase("checksum");
  saved["checksum"] = state_checksum(saved);
  Loader resumed(std::make_shared<TaggedShards>(sizes), o);
  resumed.load_state_dict(saved.dump());
  collect(resumed.next().value(), seen);
  CHECK(seen.size() == 4 * 64);
  for (const auto& [index, count] : seen) CHECK(count == 1);
}

TEST_CASE("streaming loader: a state saved over another corpus or rank is refused",
          "[stream]") {
  std::string state, alone;
  LoaderOptions o = stream_options(0);
  o.world_size = 2;
  {
    Loader loader(std::make_shared<TaggedShards>(sizes_of(4, 10), "a"), o);
    loader.next();
    state = loader.state_dict();
    Loader single(std::make_shared<TaggedShards>(sizes_of(4, 10), "a"), stream_options(0));
    single.next();
    alone = single.state_dict();
  }
  Loader other(std::make_shared<TaggedShards>(sizes_of(4, 10), "b"), o);
  CHECK_THROWS_WITH(other.load_state_dict(state), Catch::Contains("another corpus"));
  o.rank = 1;
  Loader rank1(std::make_shared<TaggedShards>(sizes_of(4, 10), "a"), o);
  CHECK_THROWS_WITH(rank1.load_state_dict(state),
                    Catch::Contains("rank 0 of 2's") && Catch::Contains("rank 1 of 2") &&
                        Catch::Contains("merge_loader_states"));
  // The state of a job of one rank is the whole job's: it resumes on two.
  rank1.load_state_dict(alone);
  size_t batches = 0;
  for (Batch& b : rank1) batches += b.size() > 0 ? 1 : 0;
  CHECK(batches > 0);
}

TEST_CASE("streaming loader: 20 workers killed at random lose and repeat no sample",
          "[stream][restart]") {
  const auto sizes = sizes_of(40, 20);  // 40 shards, 1,000 and more samples
  LoaderOptions o = stream_options(3);
  o.max_restarts_per_epoch = 25;
  o.prefetch_factor = 2;
  const std::filesystem::path crashes =
      std::filesystem::temp_directory_path() / ("mploader-stream-kills-" + std::to_string(getpid()));
  o.crash_dir = crashes.string();
  Loader loader(std::make_shared<TaggedShards>(sizes), o);
  std::mt19937 rng(2026);
  std::map<int64_t, int> seen;
  int kills = 0;
  size_t batches = 0;
  for (Batch& b : loader) {
    collect(b, seen);
    ++batches;
    if (kills < 20 && batches % 11 == 5) {
      const std::vector<int> pids = loader.worker_pids();
      REQUIRE(!pids.empty());
      if (kill(pids[rng() % pids.size()], SIGKILL) == 0) ++kills;
    }
  }
  CHECK(kills == 20);
  check_once(seen, total(sizes));
  std::filesystem::remove_all(crashes);
}

TEST_CASE("streaming loader: options that a StreamingDataset cannot take are refused",
          "[stream]") {
  auto data = std::make_shared<TaggedShards>(sizes_of(3, 5));
  LoaderOptions o = stream_options(0);
  o.sampler = std::make_shared<SequentialSampler>();
  CHECK_THROWS_WITH(Loader(data, o), Catch::Contains("plans its own order"));
  o = stream_options(0);
  o.shuffle_buffer = -1;
  CHECK_THROWS_WITH(Loader(data, o), Catch::Contains("shuffle_buffer must be"));
  o = stream_options(0);
  o.world_size = 0;
  o.rank = 2;
  CHECK_THROWS_WITH(Loader(data, o), Catch::Contains("set world_size"));
  o.world_size = 2;
  CHECK_THROWS_WITH(Loader(data, o), Catch::Contains("LoaderOptions rank 2 is outside [0, 2)"));
  // A map-style dataset needs no world size: a rank alone is taken as given.
  o = stream_options(0);
  o.world_size = 0;
  o.rank = 2;
  Loader map_style(std::make_shared<testing_datasets::CountingDataset>(8), o);
  CHECK(map_style.options().rank == 2);
  CHECK(map_style.options().world_size == 0);
}

TEST_CASE("streaming loader: world size and rank come from the launcher when not given",
          "[stream]") {
  setenv("RANK", "1", 1);
  setenv("WORLD_SIZE", "2", 1);
  LoaderOptions o = stream_options(0);
  o.world_size = 0;
  Loader loader(std::make_shared<TaggedShards>(sizes_of(4, 10)), o);
  unsetenv("RANK");
  unsetenv("WORLD_SIZE");
  CHECK(loader.options().world_size == 2);
  CHECK(loader.options().rank == 1);
}

TEST_CASE("streaming loader: autotuned workers change between epochs only, and each epoch "
          "still reads every sample once, in one run per process", "[stream][autotune]") {
  const auto sizes = sizes_of(12, 10);
  for (const bool persistent : {false, true}) {
    LoaderOptions o = stream_options(kAuto);
    o.persistent_workers = persistent;
    mploader::detail::set_autotune_churn_for_testing(2);  // a change decided every other batch
    Loader loader(std::make_shared<TaggedShards>(sizes), o);
    mploader::detail::set_autotune_churn_for_testing(0);
    std::set<size_t> counts;
    for (uint64_t epoch = 0; epoch < 5; ++epoch) {
      loader.set_epoch(epoch);
      std::map<int64_t, int> seen;
      std::map<int64_t, std::set<int64_t>> pids_of_shard;
      std::set<int64_t> pids;
      int64_t running = 0;
      for (Batch& b : loader) {
        if (pids.empty()) running = loader.stats().workers_running;
        collect(b, seen);
        for (size_t r = 0; r < b.size(); ++r) {
          const int64_t row = static_cast<int64_t>(r);
          const int64_t pid = b["pid"][row].item<int64_t>();
          pids_of_shard[b["shard"][row].item<int64_t>()].insert(pid);
          pids.insert(pid);
        }
      }
      INFO("persistent " << persistent << ", epoch " << epoch);
      check_once(seen, total(sizes));
      size_t readers = 0;  // (shard, process) pairs: shared only at the streams' borders
      for (const auto& [shard, shard_pids] : pids_of_shard) readers += shard_pids.size();
      CHECK(readers <= 12 + pids.size() - 1);
      // One worker process per stream, the epoch through: a change waits for the next epoch.
      CHECK(static_cast<int64_t>(pids.size()) <= running);
      counts.insert(pids.size());
    }
    CHECK(counts.size() >= 2);
    const LoaderStats s = loader.stats();
    REQUIRE_FALSE(s.autotune.empty());
    CHECK(s.autotune.size() <= 5);  // at most one change per epoch
  }
}

}  // namespace test_streaming_loader
