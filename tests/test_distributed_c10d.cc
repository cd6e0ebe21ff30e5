// Real multi-process runs over c10d's Gloo backend on loopback: N forked ranks meet through a
// TCPStore, each iterates an mploader::Loader (worker processes) with DistributedBucketSampler
// and allreduces once per batch; the job ends without a hang and with the right global sample
// count. And ranks that disagree (seed, dataset size, world size) get the same clear error from
// verify_ranks_agree on every rank instead of hanging. Every run is bounded by a deadline after
// which the ranks are killed and the test fails.
#include <mploader/bucket_sampler.h>
#include <mploader/errors.h>
#include <mploader/loader.h>
#include <mploader/rank_agreement.h>
#include <mploader/streaming.h>

#include <catch2/catch.hpp>

#if defined(USE_C10D_GLOO) && __has_include(<gloo/config.h>) && \
    __has_include(<torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>)
#define MPLOADER_TEST_GLOO 1
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "util/torch_compat.h"
#endif

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <thread>

namespace test_distributed_c10d {

#ifdef MPLOADER_TEST_GLOO

namespace {

// The Gloo backend, and the c10d::ProcessGroup over it (the same object in libtorch 1.13, two in
// 2.x: util/torch_compat.h). verify_ranks_agree is called over both.
struct Group {
  c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo;
  c10::intrusive_ptr<c10d::ProcessGroup> group;
};
using Connect = std::function<Group()>;
// What one rank does; returns "ok ..." or what went wrong.
using RankBody = std::function<std::string(int rank, const Connect& connect)>;

constexpr auto kGlooTimeout = std::chrono::seconds(30);

// Rank 0 serves the store on a free port and tells the others through `port_pipe`.
Group connect(int rank, int world, int port_pipe[2]) {
  c10d::TCPStoreOptions so;
  so.isServer = rank == 0;
  so.numWorkers = world;
  so.waitWorkers = false;
  so.timeout = kGlooTimeout;
  so.port = 0;
  if (rank != 0 && read(port_pipe[0], &so.port, sizeof so.port) != sizeof so.port) {
    throw std::runtime_error("rank 0 never sent the store's port");
  }
  auto store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", so);
  if (rank == 0) {
    const uint16_t port = store->getPort();
    for (int r = 1; r < world; ++r) {
      if (write(port_pipe[1], &port, sizeof port) != sizeof port) throw std::runtime_error("pipe");
    }
  }
  auto options = c10d::ProcessGroupGloo::Options::create();
  options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  options->timeout = kGlooTimeout;
  auto gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, world, options);
  return {gloo, mploader::compat::process_group_of(gloo, store)};
}

[[noreturn]] void rank_main(int rank, int world, int port_pipe[2], int result_fd,
                            const RankBody& body) {
  std::string result;
  try {
    result = body(rank, [&] { return connect(rank, world, port_pipe); });
  } catch (const std::exception& e) {
    result = std::string("exception: ") + e.what();
  }
  const ssize_t ignored = write(result_fd, result.data(), result.size());
  (void)ignored;
  _exit(result.rfind("ok", 0) == 0 ? 0 : 1);
}

// Forks `world` ranks running `body`; their results, in rank order. Ranks still running at the
// deadline are killed and reported as such.
std::vector<std::string> run_ranks(int world, const RankBody& body,
                                   std::chrono::seconds deadline = std::chrono::seconds(90)) {
  int port_pipe[2];
  REQUIRE(pipe(port_pipe) == 0);
  std::vector<pid_t> pids;
  std::vector<int> result_fds;
  for (int rank = 0; rank < world; ++rank) {
    int result[2];
    REQUIRE(pipe(result) == 0);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      close(result[0]);
      if (rank != 0) close(port_pipe[1]);  // a dead rank 0 then reads as end of file
      rank_main(rank, world, port_pipe, result[1], body);
    }
    close(result[1]);
    pids.push_back(pid);
    result_fds.push_back(result[0]);
  }
  close(port_pipe[0]);
  close(port_pipe[1]);
  std::vector<std::string> results(world);
  std::vector<bool> done(world, false);
  const auto end = std::chrono::steady_clock::now() + deadline;
  for (int left = world; left > 0;) {
    for (int r = 0; r < world; ++r) {
      if (done[r] || waitpid(pids[r], nullptr, WNOHANG) != pids[r]) continue;
      done[r] = true;
      --left;
      char buf[4096];
      ssize_t n;
      while ((n = read(result_fds[r], buf, sizeof buf)) > 0) results[r].append(buf, n);
    }
    if (left > 0 && std::chrono::steady_clock::now() > end) {
      for (int r = 0; r < world; ++r) {
        if (done[r]) continue;
        kill(pids[r], SIGKILL);
        waitpid(pids[r], nullptr, 0);
        results[r] = "killed: still running after " + std::to_string(deadline.count()) + " s";
        done[r] = true;
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (int fd : result_fds) close(fd);
  return results;
}

std::vector<int64_t> job_lengths(size_t n) {
  std::vector<int64_t> lengths(n);
  uint64_t x = 12345;
  for (auto& l : lengths) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const uint64_t r = x >> 33;
    l = 1 + static_cast<int64_t>(r % 8 == 0 ? r % 400 : r % 60);  // mostly short, a long tail
  }
  return lengths;
}

// "tokens": int64 [length] filled with the index.
class TokenDataset : public mploader::Dataset {
 public:
  explicit TokenDataset(std::vector<int64_t> lengths) : lengths_(std::move(lengths)) {}
  size_t size() const override { return lengths_.size(); }
  mploader::Sample get(int64_t index) override {
    return {{"tokens", at::full({lengths_[index]}, index, at::kLong)}};
  }

 private:
  std::vector<int64_t> lengths_;
};

int64_t allreduce_sum(c10d::ProcessGroup& group, at::Tensor t) {
  std::vector<at::Tensor> v{t};
  group.allreduce(v)->wait();
  return v[0].sum().item<int64_t>();
}

// One epoch of a rank: an allreduce per batch; checks the global counts at the end.
std::string train_epoch(int world, mploader::Loader& loader, c10d::ProcessGroup& group,
                        const mploader::DistributedBucketSampler& sampler, uint64_t epoch) {
  const int64_t n = static_cast<int64_t>(sampler.lengths().size());
  loader.set_epoch(epoch);
  at::Tensor seen = at::zeros({n}, at::kLong);
  int64_t steps = 0, global_samples = 0;
  for (mploader::Batch& b : loader) {
    const at::Tensor tokens = b["tokens"];
    if (!at::equal(tokens.select(1, 0), at::tensor(b.indices(), at::kLong))) return "bad batch";
    global_samples += allreduce_sum(group, at::tensor({int64_t(b.size())}, at::kLong));
    for (int64_t i : b.indices()) seen[i] += 1;
    ++steps;
  }
  // A rank with fewer batches would have left the others waiting in an allreduce above.
  const mploader::BucketEpochStats st = sampler.stats(epoch);
  const int64_t expected = n + static_cast<int64_t>(st.padded_samples);
  std::vector<at::Tensor> counts{seen};
  group.allreduce(counts)->wait();
  const int64_t all_steps = allreduce_sum(group, at::tensor({steps}, at::kLong));
  if (global_samples != expected || counts[0].sum().item<int64_t>() != expected ||
      counts[0].min().item<int64_t>() < 1 || all_steps != steps * world ||
      steps != static_cast<int64_t>(st.batches_per_rank)) {
    return "epoch " + std::to_string(epoch) + ": " + std::to_string(global_samples) +
           " samples over all ranks, expected " + std::to_string(expected) + "; " +
           std::to_string(steps) + " steps, expected " + std::to_string(st.batches_per_rank);
  }
  return "ok " + std::to_string(global_samples);
}

// Shards of uneven sizes; "index": int64 scalar, the global index.
class UnevenShards : public mploader::StreamingDataset {
 public:
  explicit UnevenShards(size_t shards) {
    std::vector<mploader::ShardInfo> s;
    for (size_t i = 0; i < shards; ++i) {
      s.push_back({"part-" + std::to_string(i), static_cast<int64_t>(5 + (i * 37) % 29)});
    }
    declare_shards(std::move(s));
  }
  std::optional<mploader::SampleLayout> sample_layout() const override {
    return mploader::SampleLayout{{"index", at::kLong, {}}};
  }
  void write(int64_t index, mploader::SampleWriter& out) override {
    *out.data<int64_t>(0) = index;
  }
};

// One epoch of a streaming rank: an allreduce per batch, then every sample's count over all
// ranks: at least once each, and the ranks' step counts equal.
std::string stream_epoch(int world, mploader::Loader& loader, c10d::ProcessGroup& group,
                         uint64_t epoch) {
  const int64_t n = static_cast<int64_t>(loader.rank_agreement().dataset_size);
  loader.set_epoch(epoch);
  at::Tensor seen = at::zeros({n}, at::kLong);
  int64_t steps = 0;
  for (mploader::Batch& b : loader) {
    allreduce_sum(group, at::tensor({int64_t(b.size())}, at::kLong));
    for (int64_t i : b.indices()) seen[i] += 1;
    ++steps;
  }
  std::vector<at::Tensor> counts{seen};
  group.allreduce(counts)->wait();
  const int64_t all_steps = allreduce_sum(group, at::tensor({steps}, at::kLong));
  if (counts[0].min().item<int64_t>() < 1 || all_steps != steps * world) {
    return "epoch " + std::to_string(epoch) + ": a sample missed or unequal steps (" +
           std::to_string(steps) + " here, " + std::to_string(all_steps) + " in all)";
  }
  return "ok " + std::to_string(steps);
}

}  // namespace

TEST_CASE("c10d: Gloo ranks stream uneven shards in equal steps, every sample, no hang",
          "[distributed][c10d][stream]") {
  const int world = 2;
  const std::vector<std::string> results = run_ranks(world, [&](int rank, const Connect& connect) {
    mploader::LoaderOptions o;
    o.batch_size = 4;
    o.num_workers = 2;
    o.shuffle = true;
    o.shuffle_buffer = 6;
    o.persistent_workers = true;  // forked now, before Gloo starts its threads
    o.timeout = std::chrono::seconds(30);
    o.rank = rank;
    o.world_size = world;
    mploader::Loader loader(std::make_shared<UnevenShards>(13), o);
    Group group = connect();
    std::string out;
    for (uint64_t epoch = 0; epoch < 3; ++epoch) {
      mploader::verify_ranks_agree(*group.group, loader.rank_agreement(), kGlooTimeout);
      out = stream_epoch(world, loader, *group.group, epoch);
      if (out.rfind("ok", 0) != 0) return out;
    }
    return out;
  });
  for (int r = 0; r < world; ++r) {
    INFO("rank " << r << ": " << results[r]);
    CHECK(results[r].rfind("ok ", 0) == 0);
  }
  CHECK(results[0] == results[1]);
}

TEST_CASE("c10d: streaming ranks with different shards or workers fail alike, no hang",
          "[distributed][c10d][stream]") {
  // Rank 1 differs by: 0 one shard more, 1 one worker more (another split of its shards).
  for (int variant = 0; variant < 2; ++variant) {
    const std::vector<std::string> results = run_ranks(2, [&](int rank, const Connect& connect) {
      mploader::LoaderOptions o;
      o.batch_size = 4;
      o.num_workers = variant == 1 && rank == 1 ? 3 : 2;
      o.rank = rank;
      o.world_size = 2;
      mploader::Loader loader(std::make_shared<UnevenShards>(variant == 0 && rank == 1 ? 9 : 8),
                              o);
      Group group = connect();
      try {
        mploader::verify_ranks_agree(*group.group, loader.rank_agreement(), kGlooTimeout);
      } catch (const mploader::OptionError& e) {
        return std::string("ok ") + e.what();
      }
      return std::string("no error");
    }, std::chrono::seconds(60));
    for (int r = 0; r < 2; ++r) {
      INFO("variant " << variant << ", rank " << r << ": " << results[r]);
      CHECK(results[r].rfind("ok ", 0) == 0);
      CHECK(results[r].find("the ranks disagree") != std::string::npos);
    }
  }
}

TEST_CASE("c10d: Gloo ranks iterate Loaders with the bucket sampler, no hang, every sample",
          "[distributed][c10d]") {
  const int world = 3;
  const std::vector<std::string> results = run_ranks(world, [&](int rank, const Connect& connect) {
    const std::vector<int64_t> lengths = job_lengths(1000);
    mploader::BucketOptions bo;
    bo.max_tokens = 1024;
    bo.seed = 5;
    auto sampler = std::make_shared<mploader::DistributedBucketSampler>(lengths, bo, world, rank);
    mploader::LoaderOptions o;
    o.batch_sampler = sampler;
    o.collate = mploader::pad_collate();
    o.num_workers = 1 + rank % 2;
    o.persistent_workers = true;  // forked now, before Gloo starts its threads
    o.timeout = std::chrono::seconds(30);
    o.rank = rank;
    o.world_size = world;
    mploader::Loader loader(std::make_shared<TokenDataset>(lengths), o);
    Group group = connect();
    std::string out;
    for (uint64_t epoch = 0; epoch < 2; ++epoch) {
      mploader::verify_ranks_agree(*group.group, *sampler, lengths.size(), epoch, kGlooTimeout);
      out = train_epoch(world, loader, *group.group, *sampler, epoch);
      if (out.rfind("ok", 0) != 0) return out;
    }
    return out;
  });
  for (int r = 0; r < world; ++r) {
    INFO("rank " << r << ": " << results[r]);
    CHECK(results[r].rfind("ok ", 0) == 0);
  }
  CHECK(results[0] == results[1]);  // the same global sample count on every rank
}

TEST_CASE("c10d: ranks that disagree get the same clear error on every rank, no hang",
          "[distributed][c10d]") {
  // rank 1 differs by: 0 the seed, 1 the dataset, 2 the world size its sampler was built for.
  for (int variant = 0; variant < 3; ++variant) {
    const char* expected[] = {"the ranks disagree on the seed (rank 0: 7, rank 1: 8)",
                              "the ranks disagree on the dataset size (rank 0: 300, rank 1: 299)",
                              "rank 1 of a process group of 2 built its sampler as rank 1 of 3"};
    const std::vector<std::string> results = run_ranks(2, [&](int rank, const Connect& connect) {
      std::vector<int64_t> lengths = job_lengths(300);
      mploader::BucketOptions bo;
      bo.max_tokens = 512;
      bo.seed = variant == 0 && rank == 1 ? 8 : 7;
      if (variant == 1 && rank == 1) lengths.pop_back();
      const int64_t world = variant == 2 && rank == 1 ? 3 : 2;
      mploader::DistributedBucketSampler sampler(lengths, bo, world, rank);
      Group group = connect();
      try {
        // Over the backend itself: a c10d::Backend in libtorch 2.x, a ProcessGroup in 1.13.
        mploader::verify_ranks_agree(*group.gloo, sampler, lengths.size(), 0, kGlooTimeout);
      } catch (const mploader::OptionError& e) {
        return std::string(std::string(e.what()).find(expected[variant]) != std::string::npos
                               ? "ok " : "wrong message: ") + e.what();
      }
      return std::string("no error");
    }, std::chrono::seconds(60));
    for (int r = 0; r < 2; ++r) {
      INFO("variant " << variant << ", rank " << r << ": " << results[r]);
      CHECK(results[r].rfind("ok ", 0) == 0);
    }
  }
}

#else

TEST_CASE("c10d: Gloo ranks iterate Loaders with the bucket sampler, no hang, every sample",
          "[distributed][c10d]") {
  WARN("skipped: this build has no c10d Gloo headers (apt-get install libgloo-dev, and a "
       "libtorch with torch/csrc/distributed/c10d)");
}

#endif

}  // namespace test_distributed_c10d
