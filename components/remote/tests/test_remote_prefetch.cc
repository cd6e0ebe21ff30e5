// Read-ahead across shards: a worker downloads the shards its stream reads next while it reads
// the current one, within a bound in bytes, through the same shard cache (one download each),
// and a prefetch cut short by the reader going away leaves nothing half-written.
#include <catch2/catch.hpp>

#include "components/shards/tests/epoch_check.h"
#include "components/remote/tests/remote_test_support.h"

#include <mploader/loader.h>

#include <chrono>
#include <functional>
#include <map>
#include <sstream>
#include <thread>

namespace test_remote_prefetch {

using namespace shard_test;
using mploader::shards::TarShards;

namespace {

#define REQUIRE_SERVER(corpus)                                  \
  if (!(corpus).server().ok()) {                                \
    WARN("skipped: " << (corpus).server().why_not());           \
    return;                                                     \
  }

// When each shard's GET began and ended (seconds since the epoch), from nginx's access log.
struct Transfer {
  double start = 0;
  double end = 0;
};
std::map<std::string, Transfer> transfers(NginxServer& server) {
  std::map<std::string, Transfer> out;
  for (const std::string& line : server.requests()) {
    std::istringstream words(line);
    std::string method, uri, range;
    int status = 0;
    int64_t bytes = 0;
    double end = 0, seconds = 0;
    words >> method >> uri >> status >> bytes >> range >> end >> seconds;
    if (method == "GET" && status == 200) out[uri] = Transfer{end - seconds, end};
  }
  return out;
}

// Files of the cache folder that are whole shards, and downloads in progress.
int whole_shards(const std::string& dir) {
  int n = 0;
  for (const std::string& name : cached_files(dir)) n += name.find(".part") == std::string::npos;
  return n;
}
int partial_files(const std::string& dir) {
  int n = 0;
  for (const std::string& name : cached_files(dir)) n += name.find(".part") != std::string::npos;
  return n;
}

// Waits up to 20 s for `done`; false if it never came.
bool eventually(const std::function<bool()>& done) {
  for (int i = 0; i < 2000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace

TEST_CASE("remote: a worker downloads its next shards while it reads the current one",
          "[remote][process]") {
  // 20 samples of 16 KiB a shard (5 batches of 4), at 4 MiB/s: about 0.1 s a shard.
  ServedCorpus corpus("prefetch-loader", {20, 20, 20, 20}, 16 << 10, "4m");
  REQUIRE_SERVER(corpus);
  auto data = std::make_shared<TarShards>(corpus.urls(), corpus.options());
  mploader::LoaderOptions o = loader_options(mploader::StartMethod::kFork);
  o.num_workers = 1;  // one stream: shards 0, 1, 2, 3 in this order
  o.shuffle = false;
  o.shuffle_buffer = 0;
  mploader::Loader loader(data, o);
  // A training step of 0.1 s per batch. When the loop has the second batch of shard k, the
  // worker, at most prefetch_factor batches ahead, is still reading shard k: a shard k + 1
  // already on its way was fetched ahead.
  std::map<int64_t, double> second_batch_at;  // per shard
  std::map<int64_t, int> batches_of, seen;
  for (mploader::Batch& b : loader) {
    const int64_t shard = b.indices().front() / 20;
    if (++batches_of[shard] == 2) {
      second_batch_at[shard] = std::chrono::duration<double>(
          std::chrono::system_clock::now().time_since_epoch()).count();
    }
    for (int64_t g : b.indices()) ++seen[g];
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  check_once(seen, 80);
  const std::map<std::string, Transfer> got = transfers(corpus.server());
  for (int k = 0; k < 4; ++k) {
    const std::string uri = "/shard-" + std::to_string(k) + ".tar";
    CHECK(corpus.server().count(uri, 200) == 1);  // through the one cache: once each
    REQUIRE(got.count(uri) == 1);
    if (k > 0) CHECK(got.at(uri).start < second_batch_at[k - 1]);
  }
}

TEST_CASE("remote: read-ahead stays within prefetch_bytes and goes on as shards are read",
          "[remote]") {
  ServedCorpus corpus("prefetch-bound", {6, 6, 6}, 4 << 10);
  REQUIRE_SERVER(corpus);
  auto options = corpus.options();
  TarShards probe(corpus.urls(), options);
  options.remote.prefetch_bytes = probe.scans()[1].file_bytes;  // room for one shard
  TarShards data(corpus.urls(), options);
  data.prefetch_shards({1, 2});
  REQUIRE(eventually([&] { return whole_shards(corpus.cache_dir()) == 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // Shard 2 waits: shard 1, held for the reader, fills the bound.
  CHECK(cached_files(corpus.cache_dir()).size() == 1);
  CHECK(corpus.server().count("/shard-2.tar", 200) == 0);
  for (int64_t i = 6; i < 12; ++i) CHECK(bytes_of(data.get(i)["txt"]) == txt_of(i));
  // The reader took shard 1 from the read-ahead, which then fetched shard 2.
  REQUIRE(eventually([&] { return whole_shards(corpus.cache_dir()) == 2; }));
  CHECK(corpus.server().count("/shard-0.tar", 200) == 0);
  CHECK(corpus.server().count("/shard-1.tar", 200) == 1);
  CHECK(corpus.server().count("/shard-2.tar", 200) == 1);
  CHECK(data.prefetched_shards() == 2);
  for (int64_t i = 12; i < 18; ++i) CHECK(bytes_of(data.get(i)["txt"]) == txt_of(i));
  CHECK(corpus.server().count("/shard-2.tar", 200) == 1);  // read from the cache
}

TEST_CASE("remote: a prefetch cut short by the dataset going away leaves no partial file",
          "[remote]") {
  // About 330 KB at 64 KiB/s: the download is still running when the dataset goes.
  ServedCorpus corpus("prefetch-cancel", {20}, 16 << 10, "64k");
  REQUIRE_SERVER(corpus);
  auto data = std::make_unique<TarShards>(corpus.urls(), corpus.options());
  data->prefetch_shards({0});
  REQUIRE(eventually([&] { return partial_files(corpus.cache_dir()) == 1; }));
  const int64_t shard_bytes = data->scans()[0].file_bytes;
  data.reset();
  CHECK(cached_files(corpus.cache_dir()).empty());
  // The download was dropped, not waited for: nginx logs the response cut short.
  std::string logged;
  REQUIRE(eventually([&] {
    for (const std::string& line : corpus.server().requests()) {
      if (line.find("/shard-0.tar") != std::string::npos) logged = line;
    }
    return !logged.empty();
  }));
  INFO(logged);
  std::istringstream words(logged);
  std::string method, uri;
  int status = 0;
  int64_t sent = 0;
  words >> method >> uri >> status >> sent;
  CHECK(sent < shard_bytes);
}

TEST_CASE("remote: prefetch_bytes = 0 fetches nothing ahead", "[remote]") {
  ServedCorpus corpus("prefetch-off", {4, 4});
  REQUIRE_SERVER(corpus);
  auto options = corpus.options();
  options.remote.prefetch_bytes = 0;
  TarShards data(corpus.urls(), options);
  data.prefetch_shards({0, 1});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(cached_files(corpus.cache_dir()).empty());
  CHECK(bytes_of(data.get(5)["txt"]) == txt_of(5));
  CHECK(data.prefetched_shards() == 0);
}

}  // namespace test_remote_prefetch
