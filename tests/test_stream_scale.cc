// A StreamingDataset at the scale of a real corpus: a 1 TiB token file (a sparse file, which
// costs no disk) and a stream of a trillion samples plan their epochs with memory in their
// shards, not their samples, in the training process and in each worker, and keep exact
// resume and elastic resume.
#include "process_memory.h"

#include <mploader/elastic.h>
#include <mploader/errors.h>
#include <mploader/loader.h>
#include <mploader/token_stream.h>

#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

namespace test_stream_scale {

using namespace mploader;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
// The issue of scale is memory per sample: a job over 1024 times the data may use this much
// more memory at most, in any of its processes.
constexpr int64_t kAllowedGrowth = 100 * kMiB;

int64_t resident_bytes(int pid = 0) { return testing_memory::status_bytes("VmRSS:", pid); }

struct SparseFile {
  fs::path path;
  SparseFile(const std::string& name, uintmax_t bytes)
      : path(fs::temp_directory_path() /
             ("mploader-scale-" + std::to_string(getpid()) + "-" + name)) {
    std::ofstream(path).close();
    fs::resize_file(path, bytes);
  }
  ~SparseFile() { fs::remove(path); }
};

LoaderOptions scale_options(int64_t workers) {
  LoaderOptions o;
  o.batch_size = 8;
  o.num_workers = workers;
  o.shuffle = true;
  o.shuffle_buffer = 1000;
  o.seed = 3;
  o.world_size = 1;
  o.timeout = std::chrono::seconds(120);
  return o;
}

// What one job costs: the training process's growth from building the Loader to its first
// batch, and its workers' memory then.
struct JobMemory {
  int64_t loop = 0;
  int64_t worker = 0;  // the largest
};

JobMemory first_batch_memory(const std::string& file, int64_t workers) {
  TokenStreamOptions to;
  to.context = 1024;
  const int64_t before = resident_bytes();
  auto data = std::make_shared<TokenStream>(std::vector<std::string>{file}, to);
  Loader loader(data, scale_options(workers));
  const std::optional<Batch> batch = loader.next();
  REQUIRE(batch);
  CHECK(batch->size() == 8);
  CHECK((*batch)["input"].sum().item<int64_t>() == 0);  // a sparse file reads as zeros
  JobMemory m;
  m.loop = resident_bytes() - before;
  for (int pid : loader.worker_pids()) m.worker = std::max(m.worker, resident_bytes(pid));
  return m;
}

// A stream of `shards` shards of `per_shard` samples each; a sample is its own index.
class CountedStream : public StreamingDataset {
 public:
  CountedStream(size_t shards, int64_t per_shard) {
    std::vector<ShardInfo> infos;
    for (size_t s = 0; s < shards; ++s) infos.push_back({"part-" + std::to_string(s), per_shard});
    declare_shards(std::move(infos));
  }
  std::optional<SampleLayout> sample_layout() const override {
    return SampleLayout{{"index", at::kLong, {}}};
  }
  void write(int64_t index, SampleWriter& out) override { *out.data<int64_t>(0) = index; }
};

// The training process's growth over a Loader's first batches, a saved state and its resume.
int64_t stream_job_growth(size_t shards, int64_t per_shard) {
  const int64_t before = resident_bytes();
  auto data = std::make_shared<CountedStream>(shards, per_shard);
  LoaderOptions o = scale_options(2);
  o.batch_size = 64;
  o.shuffle_buffer = 4096;
  std::string state;
  std::vector<int64_t> next;
  {
    Loader loader(data, o);
    for (int i = 0; i < 4; ++i) {
      const std::optional<Batch> batch = loader.next();
      REQUIRE(batch);
      CHECK((*batch)["index"].equal(at::tensor(batch->indices(), at::kLong)));
    }
    state = loader.state_dict();
    next = loader.next()->indices();
  }
  Loader resumed(data, o);
  resumed.load_state_dict(state);
  CHECK(resumed.next()->indices() == next);
  return resident_bytes() - before;
}

}  // namespace

TEST_CASE("stream scale: a stream of a trillion samples plans, saves and resumes as a small "
          "one does", "[stream][scale]") {
  stream_job_growth(1000, 1000 * 1000);  // the first Loader's one-time costs
  const int64_t billion = stream_job_growth(1000, 1000 * 1000);
  const int64_t trillion = stream_job_growth(1000, int64_t{1000} * 1000 * 1000);
  INFO("training process: " << billion / kMiB << " MiB over 1e9 samples, " << trillion / kMiB
                            << " MiB over 1e12");
  CHECK(trillion - billion < kAllowedGrowth);
}

TEST_CASE("stream scale: a 1 TiB token file costs what a 1 GiB one does to plan and start",
          "[stream][scale]") {
  const SparseFile small("small.bin", uintmax_t{1} << 30);
  const SparseFile large("large.bin", uintmax_t{1} << 40);
  first_batch_memory(small.path.string(), 2);  // the first Loader's one-time costs
  const JobMemory gib = first_batch_memory(small.path.string(), 2);
  const JobMemory tib = first_batch_memory(large.path.string(), 2);
  INFO("training process: " << gib.loop / kMiB << " MiB over 1 GiB, " << tib.loop / kMiB
                            << " MiB over 1 TiB; a worker: " << gib.worker / kMiB << " and "
                            << tib.worker / kMiB << " MiB");
  CHECK(tib.loop - gib.loop < kAllowedGrowth);
  CHECK(tib.worker - gib.worker < kAllowedGrowth);
}

TEST_CASE("stream scale: a 1 TiB token file's epoch resumes exactly, also on another world "
          "size", "[stream][scale]") {
  const SparseFile large("resume.bin", uintmax_t{1} << 40);
  TokenStreamOptions to;
  to.context = 1024;
  to.windows_per_shard = int64_t{1} << 20;  // 512 shards
  auto data = std::make_shared<TokenStream>(std::vector<std::string>{large.path.string()}, to);
  REQUIRE(data->size() > size_t{500} * 1000 * 1000);
  const int64_t before = resident_bytes();
  // The same rank's state: the next batch is the one the first loader would have given.
  std::string state;
  std::vector<int64_t> fourth;
  {
    Loader loader(data, scale_options(2));
    for (int i = 0; i < 3; ++i) REQUIRE(loader.next());
    state = loader.state_dict();
    fourth = loader.next()->indices();
  }
  CHECK(state.size() < 64 * 1024);
  Loader resumed(data, scale_options(1));
  resumed.load_state_dict(state);
  CHECK(resumed.next()->indices() == fourth);
  // Two ranks, merged, resumed on three: no sample of the first phase comes again.
  std::set<int64_t> delivered;
  std::vector<std::string> states;
  for (int64_t rank = 0; rank < 2; ++rank) {
    LoaderOptions o = scale_options(1);
    o.world_size = 2;
    o.rank = rank;
    Loader loader(data, o);
    for (int i = 0; i < 5; ++i) {
      const std::optional<Batch> batch = loader.next();
      REQUIRE(batch);
      delivered.insert(batch->indices().begin(), batch->indices().end());
    }
    states.push_back(loader.state_dict());
  }
  REQUIRE(delivered.size() == 80);
  const std::string job = merge_loader_states(states);
  CHECK(job.size() < 64 * 1024);
  for (int64_t rank = 0; rank < 3; ++rank) {
    LoaderOptions o = scale_options(1);
    o.world_size = 3;
    o.rank = rank;
    Loader loader(data, o);
    loader.load_state_dict(job);
    for (int i = 0; i < 5; ++i) {
      const std::optional<Batch> batch = loader.next();
      REQUIRE(batch);
      for (int64_t index : batch->indices()) CHECK(delivered.count(index) == 0);
    }
  }
  CHECK(resident_bytes() - before < kAllowedGrowth);
}

}  // namespace test_stream_scale
