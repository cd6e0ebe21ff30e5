// TarShards under a real Loader: every sample of an epoch exactly once through workers and a
// shuffle buffer, fork and spawn, image members through a vision::Compose, and a shard that
// vanished reaching the training loop as a WorkerError that names it.
#include <catch2/catch.hpp>

#include "components/shards/tests/epoch_check.h"
#include "tests/stderr_capture.h"

#include <mploader/errors.h>
#include <mploader/loader.h>
#include <mploader/shards/tar_shards.h>
#include <mploader/vision/encode.h>

#include <ATen/ATen.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <sstream>

namespace test_tar_loader {

using namespace shard_test;
using mploader::shards::TarShards;
using mploader::shards::TarShardsOptions;
using Catch::Matchers::Contains;
namespace vision = mploader::vision;

namespace {

// A JPEG of one colour, `width` x `height`.
std::string solid_jpeg(int width, int height, uint8_t r, uint8_t g, uint8_t b) {
  std::vector<uint8_t> pixels;
  for (int i = 0; i < width * height; ++i) pixels.insert(pixels.end(), {r, g, b});
  const std::vector<uint8_t> jpeg = vision::encode_jpeg(pixels.data(), width, height, 3, 95);
  return std::string(jpeg.begin(), jpeg.end());
}

}  // namespace

TEST_CASE("shards: a Loader with 2 workers and a shuffle buffer delivers every sample once",
          "[shards][process]") {
  TempDir dir("loader");
  const std::vector<int64_t> sizes{9, 14, 5, 11, 20, 7};
  TarShardsOptions o;
  o.keys = {"idx", "txt"};
  o.int_keys = {"idx"};
  o.read_ahead = 8;
  auto data = std::make_shared<TarShards>(write_corpus(dir, sizes), o);
  REQUIRE(data->size() == 66);
  // The training process reads first: its open tar must not move under the forked workers
  // (a descriptor shared across fork shares its offset), nor theirs under it.
  CHECK(data->get(3)["idx"].item<int64_t>() == 3);
  mploader::Loader loader(data, loader_options(mploader::StartMethod::kFork));
  check_once(run_epoch(loader, 0), 66);
  check_once(run_epoch(loader, 1), 66);
  CHECK(loader.stats().skipped_samples == 0);
  CHECK(data->get(4)["idx"].item<int64_t>() == 4);
  CHECK(bytes_of(data->get(5)["txt"]) == txt_of(5));
}

TEST_CASE("shards: kSkip under a Loader counts and lists each bad sample with its tar",
          "[shards][process]") {
  TempDir dir("loaderskip");
  std::vector<std::string> paths;
  for (int shard = 0; shard < 2; ++shard) {
    std::vector<Entry> entries;
    for (int k = 0; k < 10; ++k) {
      const int64_t g = shard * 10 + k;
      const std::string key = "s" + std::to_string(g);
      entries.push_back({key + ".txt", txt_of(g)});
      if (k != 4) entries.push_back({key + ".idx", std::to_string(g)});  // sample 4: no idx
    }
    paths.push_back(dir.file("skip-" + std::to_string(shard) + ".tar"));
    write_tar(paths.back(), entries);
  }
  TarShardsOptions o;
  o.keys = {"idx", "txt"};
  o.int_keys = {"idx"};
  o.on_bad_sample = mploader::shards::OnBadSample::kSkip;
  mploader::Loader loader(std::make_shared<TarShards>(paths, o),
                          loader_options(mploader::StartMethod::kFork));
  int64_t samples = 0;
  for (mploader::Batch& b : loader) {
    for (size_t i = 0; i < b.indices().size(); ++i) {
      const int64_t g = b.indices()[i];
      // The substitute of sample 4 of a shard is sample 5 of that shard.
      CHECK(b["idx"][static_cast<int64_t>(i)].item<int64_t>() == (g % 10 == 4 ? g + 1 : g));
      ++samples;
    }
  }
  CHECK(samples == 20);
  const mploader::LoaderStats stats = loader.stats();
  REQUIRE(stats.skipped_samples == 2);
  REQUIRE(stats.skipped.size() == 2);
  for (const mploader::SkippedSample& s : stats.skipped) {
    CHECK(s.substitute == s.index + 1);
    CHECK(s.source == paths[static_cast<size_t>(s.index / 10)]);
    CHECK_THAT(s.reason, Contains("\"idx\""));
  }
}

TEST_CASE("shards: spawned workers rebuild TarShards from its recipe, image keys included",
          "[shards][process]") {
  TempDir dir("spawn");
  std::vector<std::string> paths;
  for (int shard = 0; shard < 3; ++shard) {
    std::vector<Entry> entries;
    for (int k = 0; k < 5; ++k) {
      const int64_t g = shard * 5 + k;
      const std::string key = "s" + std::to_string(g);
      entries.push_back({key + ".idx", std::to_string(g)});
      entries.push_back({key + ".txt", txt_of(g)});
      entries.push_back({key + ".jpg", solid_jpeg(48, 40, static_cast<uint8_t>(10 * g), 90, 200)});
    }
    paths.push_back(dir.file("img-" + std::to_string(shard) + ".tar"));
    write_tar(paths.back(), entries);
  }
  TarShardsOptions o;
  o.keys = {"idx", "txt", "jpg"};
  o.int_keys = {"idx"};
  o.image_keys.emplace("jpg", vision::Compose({vision::Resize(40), vision::CenterCrop(32),
                                               vision::ToTensor()}));
  auto data = std::make_shared<TarShards>(paths, o);
  mploader::Loader loader(data, loader_options(mploader::StartMethod::kSpawn));
  std::map<int64_t, int> seen;
  for (mploader::Batch& b : loader) {
    const at::Tensor images = b["jpg"];
    REQUIRE((images.sizes().vec() == std::vector<int64_t>{images.size(0), 3, 32, 32}));
    REQUIRE(images.scalar_type() == at::kFloat);
    for (size_t i = 0; i < b.indices().size(); ++i) {
      const int64_t g = b.indices()[i];
      REQUIRE(b["idx"][static_cast<int64_t>(i)].item<int64_t>() == g);
      const at::Tensor red = images[static_cast<int64_t>(i)][0];
      CHECK(std::abs(red.mean().item<double>() - 10.0 * g / 255.0) < 4.0 / 255.0);
      CHECK(std::abs(images[static_cast<int64_t>(i)][2].mean().item<double>() - 200.0 / 255.0) <
            4.0 / 255.0);
      ++seen[g];
    }
  }
  check_once(seen, 15);
  // Spawned workers report decoding and transforms, apart from reading the tar.
  mploader::StageTimes stages;
  for (const mploader::WorkerStats& w : loader.stats().workers) stages += w.stages;
  CHECK(stages.decode_ns > 0);
  CHECK(stages.transform_ns > 0);
  CHECK(stages.read_ns > 0);
}

TEST_CASE("shards: an image member decodes through the Compose into its output tensor") {
  TempDir dir("image");
  write_tar(dir.file("i.tar"), {{"x.jpg", solid_jpeg(64, 48, 250, 20, 120)}, {"x.cls", "3"}});
  TarShardsOptions o;
  o.keys = {"jpg", "cls"};
  o.int_keys = {"cls"};
  o.image_keys.emplace("jpg", vision::Compose({vision::Resize(40), vision::CenterCrop(32),
                                               vision::ToTensor()}));
  TarShards data({dir.file("i.tar")}, o);
  mploader::Sample s = data.get(0);
  REQUIRE((s["jpg"].sizes().vec() == std::vector<int64_t>{3, 32, 32}));
  CHECK(std::abs(s["jpg"][0].mean().item<double>() - 250.0 / 255.0) < 4.0 / 255.0);
  CHECK(std::abs(s["jpg"][1].mean().item<double>() - 20.0 / 255.0) < 4.0 / 255.0);
  CHECK(s["cls"].item<int64_t>() == 3);
  // Not an image: the error names the member and says how to skip such samples.
  write_tar(dir.file("bad.tar"), {{"y.jpg", "not a jpeg"}, {"y.cls", "1"}});
  TarShards bad({dir.file("bad.tar")}, o);
  REQUIRE_THROWS_WITH(bad.get(0), Contains("y.jpg") && Contains("does not decode") &&
                                      Contains(dir.file("bad.tar")));
}

TEST_CASE("shards: a shard deleted before the epoch fails the batch with its path",
          "[shards][process]") {
  TempDir dir("vanished");
  const auto paths = write_corpus(dir, {6, 6, 6, 6});
  TarShardsOptions o;
  o.keys = {"idx", "txt"};
  o.int_keys = {"idx"};
  auto data = std::make_shared<TarShards>(paths, o);
  fs::remove(paths[2]);
  mploader::Loader loader(data, loader_options(mploader::StartMethod::kFork));
  try {
    for (mploader::Batch& b : loader) (void)b;
    FAIL("the epoch ended without an error");
  } catch (const mploader::WorkerError& e) {
    CHECK_THAT(e.what(), Contains(paths[2]) && Contains("deleted"));
  }
}

namespace {

// One rank of a 2-rank job, in a process of its own: an epoch over `paths` with 2 workers;
// writes one line per batch (its global indices) to `fd`, then "end".
[[noreturn]] void tar_rank(const std::vector<std::string>& paths, int64_t rank, int fd) {
  std::string out;
  int status = 0;
  try {
    TarShardsOptions o;
    o.keys = {"idx", "txt"};
    o.int_keys = {"idx"};
    mploader::LoaderOptions lo = loader_options(mploader::StartMethod::kFork);
    lo.world_size = 2;
    lo.rank = rank;
    mploader::Loader loader(std::make_shared<TarShards>(paths, o), lo);
    loader.set_epoch(3);
    for (mploader::Batch& b : loader) {
      for (size_t i = 0; i < b.indices().size(); ++i) {
        if (b["idx"][static_cast<int64_t>(i)].item<int64_t>() != b.indices()[i]) status = 3;
        out += std::to_string(b.indices()[i]) + ' ';
      }
      out += '\n';
    }
    out += "end\n";
  } catch (const std::exception& e) {
    out = std::string("error ") + e.what() + '\n';
    status = 4;
  }
  ssize_t left = static_cast<ssize_t>(out.size());
  for (const char* p = out.data(); left > 0;) {
    const ssize_t n = write(fd, p, static_cast<size_t>(left));
    if (n <= 0) _exit(5);
    p += n;
    left -= n;
  }
  _exit(status);
}

std::vector<std::vector<int64_t>> parse_batches(const std::string& text) {
  std::vector<std::vector<int64_t>> batches;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line) && line != "end";) {
    std::istringstream words(line);
    batches.emplace_back();
    for (int64_t g; words >> g;) batches.back().push_back(g);
  }
  return batches;
}

}  // namespace

TEST_CASE("shards: 2 ranks of 2 workers each, running at once, take equal steps over all samples",
          "[shards][process]") {
  TempDir dir("ranks");
  const std::vector<int64_t> sizes{9, 14, 5, 11, 20, 7, 16, 3};
  const std::vector<std::string> paths = write_corpus(dir, sizes);
  std::vector<pid_t> pids;
  std::vector<int> fds;
  for (int64_t rank = 0; rank < 2; ++rank) {
    int p[2];
    REQUIRE(pipe(p) == 0);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      close(p[0]);
      tar_rank(paths, rank, p[1]);
    }
    close(p[1]);
    pids.push_back(pid);
    fds.push_back(p[0]);
  }
  std::vector<std::vector<std::vector<int64_t>>> ranks;
  for (size_t r = 0; r < 2; ++r) {
    std::string text;
    char buf[4096];
    for (ssize_t n; (n = read(fds[r], buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
    close(fds[r]);
    int status = 0;
    waitpid(pids[r], &status, 0);
    INFO("rank " << r << ": " << text.substr(0, 300));
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    ranks.push_back(parse_batches(text));
  }
  CHECK(ranks[0].size() == ranks[1].size());
  // Every sample once, except whole batches a short rank repeats from its own start (kPad).
  std::map<int64_t, int> seen;
  for (const auto& batches : ranks) {
    for (size_t b = 0; b < batches.size(); ++b) {
      if (seen.count(batches[b].front()) > 0) {
        CHECK(std::find(batches.begin(), batches.begin() + b, batches[b]) != batches.begin() + b);
        continue;
      }
      for (int64_t g : batches[b]) ++seen[g];
    }
  }
  check_once(seen, 85);
}

TEST_CASE("shards: a shuffle buffer larger than read_ahead is warned about at construction",
          "[shards]") {
  TempDir dir("readahead");
  const auto paths = write_corpus(dir, {6, 6});
  TarShardsOptions o;
  o.read_ahead = 4;
  mploader::LoaderOptions lo = loader_options(mploader::StartMethod::kFork);
  lo.shuffle_buffer = 100;
  std::string logged;
  {
    testing_datasets::StderrCapture captured;
    mploader::Loader loader(std::make_shared<TarShards>(paths, o), lo);
    logged = captured.text();
  }
  CHECK_THAT(logged, Contains("shuffle_buffer is 100") && Contains("read_ahead keeps only 4") &&
                         Contains("Set read_ahead to at least 100"));
  o.read_ahead = 100;
  testing_datasets::StderrCapture captured;
  mploader::Loader quiet(std::make_shared<TarShards>(paths, o), lo);
  CHECK(captured.text().find("read_ahead") == std::string::npos);
}

}  // namespace test_tar_loader
