// Tar shards read by URL from a real nginx on 127.0.0.1, through the shard cache: every sample
// once per epoch, one download per shard per machine, and the faults a real server shows
// (killed mid-shard, 503s, a stalled connection, a body cut short, a full cache).
#include <catch2/catch.hpp>

#include "components/remote/tests/remote_test_support.h"
#include "components/shards/tests/epoch_check.h"
#include "tests/error_text.h"
#include "tests/stderr_capture.h"
#include "tests/tmpfs_mount.h"

#include <mploader/errors.h>
#include <mploader/loader.h>

#include "remote/shard_cache.h"

#include <ATen/ATen.h>

#include <sys/wait.h>

#include <functional>
#include <map>
#include <thread>

namespace test_remote_http {

using namespace shard_test;
using mploader::shards::TarShards;
using Catch::Matchers::Contains;
namespace mrd = mploader::remote::detail;

namespace {

#define REQUIRE_SERVER(corpus)                                  \
  if (!(corpus).server().ok()) {                                \
    WARN("skipped: " << (corpus).server().why_not());           \
    return;                                                     \
  }

// Epoch 0 of a Loader over `data`, built and run while `fault` runs on another thread
// (joined however the epoch ends).
std::map<int64_t, int> epoch_during(std::shared_ptr<TarShards> data,
                                    const std::function<void()>& fault) {
  std::thread side(fault);
  struct Joiner {
    std::thread& t;
    ~Joiner() { t.join(); }
  } joiner{side};
  mploader::Loader loader(std::move(data), loader_options(mploader::StartMethod::kFork));
  return run_epoch(loader, 0);
}

// Every shard GET answered in full or in part (200 or 206), per shard.
std::vector<int> served(ServedCorpus& c) {
  std::vector<int> out;
  for (size_t i = 0; i < c.paths().size(); ++i) {
    const std::string uri = "/shard-" + std::to_string(i) + ".tar";
    out.push_back(c.server().count(uri, 200) + c.server().count(uri, 206));
  }
  return out;
}

}  // namespace

TEST_CASE("remote: a Loader reads tar shards over HTTP, each sample once, each shard downloaded "
          "once", "[remote][process]") {
  ServedCorpus corpus("http", {9, 14, 5, 11, 20, 7});
  REQUIRE_SERVER(corpus);
  auto data = std::make_shared<TarShards>(corpus.urls(), corpus.options());
  REQUIRE(data->size() == 66);
  // Building the dataset read the manifest and no shard.
  CHECK(corpus.server().count("/mploader-manifest.json", 200) == 1);
  CHECK(served(corpus) == std::vector<int>(6, 0));
  mploader::Loader loader(data, loader_options(mploader::StartMethod::kFork));
  check_once(run_epoch(loader, 0), 66);
  check_once(run_epoch(loader, 1), 66);  // from the cache
  CHECK(served(corpus) == std::vector<int>(6, 1));
  CHECK(bytes_of(data->get(5)["txt"]) == txt_of(5));  // the training process shares it too
}

TEST_CASE("remote: spawned workers rebuild URL shards from the recipe and share the cache",
          "[remote][process]") {
  ServedCorpus corpus("spawn", {6, 10, 4});
  REQUIRE_SERVER(corpus);
  auto data = std::make_shared<TarShards>(corpus.urls(), corpus.options());
  mploader::LoaderOptions o = loader_options(mploader::StartMethod::kSpawn);
  mploader::Loader loader(data, o);
  check_once(run_epoch(loader, 0), 20);
  CHECK(served(corpus) == std::vector<int>(3, 1));
}

TEST_CASE("remote: nginx killed mid-shard and started again: the epoch completes, each sample "
          "once", "[remote][process]") {
  // 40 samples of 16 KiB a shard at 256 KiB/s: each shard takes over 2 s to send.
  ServedCorpus corpus("kill", {40, 40}, 16 << 10, "256k");
  REQUIRE_SERVER(corpus);
  auto options = corpus.options();
  options.remote.max_retries = 10;
  auto data = std::make_shared<TarShards>(corpus.urls(), options);
  check_once(epoch_during(data, [&] {
               std::this_thread::sleep_for(std::chrono::milliseconds(700));
               corpus.server().kill();
               std::this_thread::sleep_for(std::chrono::milliseconds(1000));
               corpus.server().start();
             }),
             80);
  // The restarted server was asked for the rest of each shard, from where it stopped.
  bool resumed = false;
  for (const std::string& line : corpus.server().requests()) {
    resumed = resumed || line.find(" 206 ") != std::string::npos;
  }
  CHECK(resumed);
}

TEST_CASE("remote: 503 responses for a while are retried, then the epoch completes",
          "[remote][process]") {
  ServedCorpus corpus("503", {12, 12});
  REQUIRE_SERVER(corpus);
  auto data = std::make_shared<TarShards>(corpus.urls(), corpus.options());
  corpus.server().fail_with_503(true);
  check_once(epoch_during(data, [&] {
               std::this_thread::sleep_for(std::chrono::milliseconds(1200));
               corpus.server().fail_with_503(false);
             }),
             24);
  CHECK(corpus.server().count("/shard-0.tar", 503) + corpus.server().count("/shard-1.tar", 503) >=
        2);
}

TEST_CASE("remote: a connection that stalls times out with the URL, not a hang", "[remote]") {
  ServedCorpus corpus("stall", {4});
  REQUIRE_SERVER(corpus);
  // A server that accepts connections and never answers: the kernel completes the handshake
  // for a listening socket that nobody accepts from.
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(listener, 16) == 0);
  socklen_t n = sizeof a;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &n);
  const std::string url = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port)) +
                          "/shard-0.tar";
  auto options = corpus.options();
  options.remote.manifest = corpus.paths()[0].substr(0, corpus.paths()[0].rfind('/')) +
                            "/mploader-manifest.json";  // the manifest from disk
  options.remote.stall_timeout_s = 1;
  options.remote.max_retries = 1;
  TarShards data({url}, options);
  const auto start = std::chrono::steady_clock::now();
  REQUIRE_THROWS_WITH(data.get(0),
                      Contains(url) && Contains("timed out") &&
                          Contains("fewer than 1024 bytes a second arrived for 1 s") &&
                          Contains("gave up after 2 tries"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));
  ::close(listener);
  // Nothing half-written is left to be served.
  CHECK(cached_files(corpus.cache_dir()).empty());
}

TEST_CASE("remote: a shard cut short on the server is detected, never served short",
          "[remote][process]") {
  ServedCorpus corpus("cut", {30}, 16 << 10, "128k");
  REQUIRE_SERVER(corpus);
  auto data = std::make_shared<TarShards>(corpus.urls(), corpus.options());
  std::thread cut([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    // Truncated while nginx sends it: nginx ends the response early, the resumed read finds
    // another ETag.
    REQUIRE(::truncate(corpus.paths()[0].c_str(), 100 << 10) == 0);
  });
  std::string error;
  try {
    data->get(29);
  } catch (const std::exception& e) {
    error = e.what();
  }
  cut.join();
  INFO(error);
  CHECK_THAT(error, Contains(corpus.urls()[0]));
  const bool says_changed = error.find("changed on the server") != std::string::npos ||
                            error.find("manifest says") != std::string::npos;
  CHECK(says_changed);
  CHECK(cached_files(corpus.cache_dir()).empty());
}

TEST_CASE("remote: a missing shard and a missing manifest are errors that name them",
          "[remote]") {
  ServedCorpus corpus("404", {3, 3});
  REQUIRE_SERVER(corpus);
  auto options = corpus.options();
  REQUIRE_THROWS_WITH(TarShards({corpus.server().url("shard-9.tar")}, options),
                      Contains("does not list \"shard-9.tar\"") &&
                          Contains("mploader-manifest"));
  options.remote.manifest = corpus.server().url("elsewhere/mploader-manifest.json");
  REQUIRE_THROWS_WITH(TarShards(corpus.urls(), options),
                      Contains("no manifest at") && Contains("HTTP 404") &&
                          Contains("elsewhere/mploader-manifest.json"));
  options.remote.manifest.clear();
  TarShards data(corpus.urls(), options);
  std::filesystem::remove(corpus.paths()[1]);
  REQUIRE_THROWS_WITH(data.get(4), Contains("HTTP 404") && Contains(corpus.urls()[1]));
  // Asked once: every later batch over the missing shard fails without a request.
  REQUIRE_THROWS_WITH(data.get(5), Contains("HTTP 404") && Contains("asked once"));
  CHECK(corpus.server().count("/shard-1.tar", 404) == 1);
}

TEST_CASE("remote: shards published without a manifest are counted once per machine, then read",
          "[remote][process]") {
  ServedCorpus corpus("no-manifest", {9, 14, 5, 11});
  REQUIRE_SERVER(corpus);
  std::filesystem::remove(std::filesystem::path(corpus.paths()[0]).parent_path() /
                          "mploader-manifest.json");
  std::shared_ptr<TarShards> data;
  {
    testing_datasets::StderrCapture err;
    data = std::make_shared<TarShards>(corpus.urls(), corpus.options());
    const std::string said = err.text();
    CHECK_THAT(said, Contains("there is no manifest at") && Contains("4 shards are downloaded") &&
                         Contains("mploader-manifest.json") && Contains(corpus.cache_dir()));
  }
  REQUIRE(data->size() == 39);
  // Each shard came whole once, into the cache the Loader's workers read.
  auto whole = [&corpus] {
    std::vector<int> out;
    for (size_t i = 0; i < 4; ++i) {
      out.push_back(corpus.server().count("/shard-" + std::to_string(i) + ".tar", 200));
    }
    return out;
  };
  CHECK(whole() == std::vector<int>(4, 1));
  mploader::Loader loader(data, loader_options(mploader::StartMethod::kFork));
  check_once(run_epoch(loader, 0), 39);
  CHECK(whole() == std::vector<int>(4, 1));
  // The next dataset over the same folder reads the counts kept in the cache: no download.
  {
    testing_datasets::StderrCapture err;
    TarShards again(corpus.urls(), corpus.options());
    CHECK(again.size() == 39);
    CHECK_THAT(err.text(), !Contains("downloaded into the shard cache"));
  }
  CHECK(whole() == std::vector<int>(4, 1));
  CHECK(corpus.server().count("/mploader-manifest.json", 404) == 2);
}

TEST_CASE("remote: a cache limit below one shard fails the batch saying so, not that the tar is "
          "damaged", "[remote][process]") {
  ServedCorpus corpus("tiny-cache", {20, 20}, 4 << 10);
  REQUIRE_SERVER(corpus);
  // Below one shard, and a limit that is no size: set where the workers read it.
  for (const char* limit : {"1K", "ten"}) {
    ::setenv("MPLOADER_CACHE_LIMIT", limit, 1);
    auto data = std::make_shared<TarShards>(corpus.urls(), corpus.options());
    for (int workers : {0, 1}) {
      INFO("MPLOADER_CACHE_LIMIT=" << limit << ", " << workers << " worker(s)");
      mploader::LoaderOptions o = loader_options(mploader::StartMethod::kFork);
      o.num_workers = workers;
      try {
        mploader::Loader loader(data, o);
        (void)loader.next();
        FAIL("a batch came through");
      } catch (const std::exception& e) {
        INFO(e.what());
        CHECK_THAT(e.what(), Contains("MPLOADER_CACHE_LIMIT") && !Contains("damaged"));
        if (std::string(limit) == "1K") CHECK_THAT(e.what(), Contains("cannot hold a shard of"));
      }
    }
  }
  ::unsetenv("MPLOADER_CACHE_LIMIT");
}

TEST_CASE("remote: a shard rewritten under its URL with a new manifest is downloaded again",
          "[remote]") {
  ServedCorpus corpus("rewrite", {6, 6});
  REQUIRE_SERVER(corpus);
  {
    TarShards before(corpus.urls(), corpus.options());
    REQUIRE(before.get(0)["idx"].item<int64_t>() == 0);
  }
  // Shard 0 now holds samples 100..104, and the manifest says so.
  write_tar(corpus.paths()[0], shard_entries(100, 5, "new"));
  write_manifest(corpus.paths()[0].substr(0, corpus.paths()[0].rfind('/')), corpus.paths());
  TarShards after(corpus.urls(), corpus.options());
  REQUIRE(after.size() == 11);
  CHECK(after.get(0)["idx"].item<int64_t>() == 100);  // never the old copy
  CHECK(corpus.server().count("/shard-0.tar", 200) == 2);
}

TEST_CASE("remote: local tars read through the cache with cache_local_paths", "[remote]") {
  TempDir dir("local-cache"), cache("local-cache-dir");
  const std::vector<std::string> paths = write_corpus(dir, {5, 7});
  mploader::shards::TarShardsOptions o;
  o.keys = {"idx", "txt"};
  o.int_keys = {"idx"};
  o.remote.cache_dir = cache.path().string();
  o.remote.cache_local_paths = true;
  TarShards data(paths, o);
  for (int64_t g = 0; g < 12; ++g) REQUIRE(bytes_of(data.get(g)["txt"]) == txt_of(g));
  CHECK(cached_files(cache.path().string()).size() == 2);
  // A tar changed after the count is refused, never served from the old copy.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  write_tar(paths[0], shard_entries(0, 5, "changed"));
  TarShards again(paths, o);
  REQUIRE(again.get(0)["idx"].item<int64_t>() == 0);
  CHECK(cached_files(cache.path().string()).size() == 3);
  write_tar(paths[1], shard_entries(5, 6, "shorter"));
  CHECK_THROWS_WITH(again.get(6), Contains(paths[1]) && Contains("changed since"));
}

// The component's errors are mploader::Errors: one catch (const mploader::Error&) takes a
// failed read, a store that cannot list, an unknown scheme and a bad pattern alike.
TEST_CASE("remote: a TransportError and the URL OptionErrors are all mploader::Errors",
          "[remote]") {
  using testing_errors::mploader_error_of;
  mploader::remote::RemoteOptions o;
  o.max_retries = 0;
  // Port 1 of this machine: nothing listens there, so the connection is refused at once.
  const std::string url = "http://127.0.0.1:1/shard-0.tar";
  auto transport = mploader::remote::make_transport(url, o);
  CHECK_THAT(mploader_error_of([&] {
               transport->read({url, 0, -1, ""}, [](const mploader::remote::ObjectInfo&) {},
                               [](const char*, size_t) {});
             }),
             Contains("127.0.0.1"));
  CHECK_THROWS_AS(transport->read({url, 0, -1, ""}, [](const mploader::remote::ObjectInfo&) {},
                                  [](const char*, size_t) {}),
                  mploader::remote::TransportError);
  CHECK_THAT(mploader_error_of([&] { (void)transport->list("http://127.0.0.1:1/train/"); }),
             Contains("does not list objects"));
  CHECK_THAT(mploader_error_of(
                 [&] { (void)mploader::remote::make_transport("gopher://host/x.tar", o); }),
             Contains("gopher"));
  CHECK_THAT(mploader_error_of(
                 [] { (void)mploader::remote::expand_braces("shard-{000..002.tar"); }),
             Contains("shard-{000..002.tar"));
}

}  // namespace test_remote_http
