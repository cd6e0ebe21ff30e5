// The shard cache shared by processes: one download per shard for two jobs of two ranks at
// once, leases that die with a killed reader, eviction on a full tmpfs and a clear error when
// nothing can be evicted; and the small parsers (brace patterns, sizes, the manifest).
#include <catch2/catch.hpp>

#include "components/shards/tests/epoch_check.h"
#include "components/remote/tests/remote_test_support.h"
#include "tests/stderr_capture.h"
#include "tests/tmpfs_mount.h"

#include <mploader/errors.h>
#include <mploader/loader.h>

#include "remote/shard_cache.h"

#include <ATen/ATen.h>

#include <signal.h>
#include <sys/wait.h>

#include <cstdlib>
#include <set>

namespace test_remote_cache {

using namespace shard_test;
using mploader::shards::TarShards;
using Catch::Matchers::Contains;
namespace mrd = mploader::remote::detail;
namespace remote = mploader::remote;

namespace {

#define REQUIRE_SERVER(corpus)                        \
  if (!(corpus).server().ok()) {                      \
    WARN("skipped: " << (corpus).server().why_not()); \
    return;                                           \
  }

// A rank of a job: its epoch's indices on `fd` as text, then exit.
[[noreturn]] void run_rank(const std::vector<std::string>& urls,
                           const mploader::shards::TarShardsOptions& options, int64_t rank,
                           int fd) {
  std::string out;
  int status = 0;
  try {
    mploader::LoaderOptions lo = loader_options(mploader::StartMethod::kFork);
    lo.world_size = 2;
    lo.rank = rank;
    mploader::Loader loader(std::make_shared<TarShards>(urls, options), lo);
    for (mploader::Batch& b : loader) {
      for (size_t i = 0; i < b.indices().size(); ++i) {
        if (b["idx"][static_cast<int64_t>(i)].item<int64_t>() != b.indices()[i]) status = 3;
        out += std::to_string(b.indices()[i]) + ' ';
      }
    }
  } catch (const std::exception& e) {
    out = std::string("error ") + e.what();
    status = 4;
  }
  const ssize_t ignored = ::write(fd, out.data(), out.size());
  (void)ignored;
  ::_exit(status);
}

std::string read_all(int fd) {
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return text;
}

int64_t file_size(const std::string& path) {
  return static_cast<int64_t>(std::filesystem::file_size(path));
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("remote: two jobs of 2 ranks of 2 workers through one cache download each shard once",
          "[remote][process]") {
  ServedCorpus corpus("jobs", {10, 10, 10, 10, 10, 10, 10, 10}, 4 << 10, "1m");
  REQUIRE_SERVER(corpus);
  std::vector<pid_t> pids;
  std::vector<int> fds;
  for (int job = 0; job < 2; ++job) {
    for (int64_t rank = 0; rank < 2; ++rank) {
      int p[2];
      REQUIRE(::pipe(p) == 0);
      const pid_t pid = ::fork();
      REQUIRE(pid >= 0);
      if (pid == 0) {
        ::close(p[0]);
        run_rank(corpus.urls(), corpus.options(), rank, p[1]);
      }
      ::close(p[1]);
      pids.push_back(pid);
      fds.push_back(p[0]);
    }
  }
  std::vector<std::multiset<int64_t>> jobs(2);
  for (size_t r = 0; r < pids.size(); ++r) {
    const std::string text = read_all(fds[r]);
    int status = 0;
    ::waitpid(pids[r], &status, 0);
    INFO("process " << r << ": " << text.substr(0, 300));
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    std::istringstream words(text);
    for (int64_t g; words >> g;) jobs[r / 2].insert(g);
  }
  for (const auto& seen : jobs) {
    REQUIRE(seen.size() == 80);  // the shards split evenly: no padding
    REQUIRE(std::set<int64_t>(seen.begin(), seen.end()).size() == 80);
  }
  for (size_t i = 0; i < 8; ++i) {
    const std::string uri = "/shard-" + std::to_string(i) + ".tar";
    CAPTURE(uri);
    CHECK(corpus.server().count(uri, 200) == 1);  // the access log: one download a shard
    CHECK(corpus.server().count(uri, 206) == 0);
  }
}

TEST_CASE("remote: a killed reader's lease dies with it, and its shard can then be evicted",
          "[remote][process]") {
  ServedCorpus corpus("lease", {20, 20}, 4 << 10);
  REQUIRE_SERVER(corpus);
  auto options = corpus.options();
  const int64_t shard_bytes = file_size(corpus.paths()[0]);
  REQUIRE(file_size(corpus.paths()[1]) == shard_bytes);
  options.remote.cache_limit_bytes = shard_bytes;  // room for one
  const std::vector<std::string> urls = corpus.urls();
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t reader = ::fork();
  REQUIRE(reader >= 0);
  if (reader == 0) {  // holds shard 0 open, as a worker reading it would
    mrd::ShardCache cache(mrd::resolve_cache_config(options.remote));
    auto transport = remote::make_transport(urls[0], options.remote);
    auto held = cache.acquire(urls[0], {shard_bytes, ""}, *transport, options.remote);
    const ssize_t ignored = ::write(ready[1], "x", 1);
    (void)ignored;
    ::pause();
    ::_exit(0);
  }
  ::close(ready[1]);
  char byte = 0;
  REQUIRE(::read(ready[0], &byte, 1) == 1);
  ::close(ready[0]);
  mrd::ShardCache cache(mrd::resolve_cache_config(options.remote));
  auto transport = remote::make_transport(urls[1], options.remote);
  REQUIRE_THROWS_WITH(cache.acquire(urls[1], {shard_bytes, ""}, *transport, options.remote),
                      Contains(corpus.cache_dir()) && Contains("the limit is") &&
                          Contains("1 shard(s) that readers hold open") &&
                          Contains("cache_limit_bytes"));
  auto tiny = options.remote;
  tiny.cache_limit_bytes = shard_bytes / 2;
  mrd::ShardCache small(mrd::resolve_cache_config(tiny));
  REQUIRE_THROWS_WITH(small.acquire(urls[1], {shard_bytes, ""}, *transport, tiny),
                      Contains("cannot hold a shard of") && Contains("Raise cache_limit_bytes"));
  ::kill(reader, SIGKILL);
  ::waitpid(reader, nullptr, 0);
  auto second = cache.acquire(urls[1], {shard_bytes, ""}, *transport, options.remote);
  CHECK(file_size(second->path()) == shard_bytes);
  const std::vector<std::string> left = cached_files(corpus.cache_dir());
  REQUIRE(left.size() == 1);  // shard 0's copy was evicted for shard 1's
  CHECK(corpus.cache_dir() + "/" + left[0] == second->path());
}

TEST_CASE("remote: a cached copy changed after its download is noticed, and downloaded again",
          "[remote]") {
  ServedCorpus corpus("changed-copy", {10}, 1 << 10);
  REQUIRE_SERVER(corpus);
  const auto options = corpus.options();
  const std::string url = corpus.urls()[0];
  const int64_t bytes = file_size(corpus.paths()[0]);
  auto transport = remote::make_transport(url, options.remote);
  mrd::ShardCache cache(mrd::resolve_cache_config(options.remote));
  const auto downloads = [&] { return corpus.server().count("/shard-0.tar", 200); };
  std::string copy;
  {
    const auto lease = cache.acquire(url, {bytes, ""}, *transport, options.remote);
    copy = lease->path();
  }
  REQUIRE(downloads() == 1);
  const std::string original = read_file(copy);
  // Touched alone: hashed once, found the same, kept.
  std::filesystem::last_write_time(copy, std::filesystem::file_time_type::clock::now());
  CHECK(read_file(cache.acquire(url, {bytes, ""}, *transport, options.remote)->path()) ==
        original);
  CHECK(downloads() == 1);
  // Written over in place, at the same size: removed and downloaded again.
  {
    std::fstream f(copy, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(600);
    f << "tampered";
  }
  REQUIRE(file_size(copy) == bytes);
  testing_datasets::StderrCapture err;
  CHECK(read_file(cache.acquire(url, {bytes, ""}, *transport, options.remote)->path()) ==
        original);
  CHECK(downloads() == 2);
  CHECK_THAT(err.text(), Contains("changed after it was downloaded") && Contains(copy));
}

TEST_CASE("remote: a cache on a full tmpfs evicts and goes on, or says what holds the space",
          "[remote]") {
  TmpfsMount tmpfs("640k");
  if (!tmpfs.ok()) {
    WARN("skipped: " << tmpfs.why_not());
    return;
  }
  ServedCorpus corpus("tmpfs", {10, 10, 10}, 20 << 10);  // about 220 KiB a shard
  REQUIRE_SERVER(corpus);
  auto options = corpus.options();
  options.remote.cache_dir = tmpfs.path() + "/cache";
  TarShards data(corpus.urls(), options);
  for (int64_t g = 0; g < 30; ++g) REQUIRE(data.get(g)["idx"].item<int64_t>() == g);
  CHECK(corpus.server().count("/shard-0.tar", 200) == 1);
  CHECK(corpus.server().count("/shard-2.tar", 200) == 1);
  // Filled by something that is not a shard: nothing to evict, and the error says so.
  std::ofstream(tmpfs.path() + "/other") << std::string(600 << 10, 'x');
  TarShards again(corpus.urls(), options);
  REQUIRE_THROWS_WITH(again.get(0), Contains(tmpfs.path() + "/cache") &&
                                        Contains("the file system is full") &&
                                        Contains("free") && Contains("cache_dir"));
}

TEST_CASE("remote: brace patterns, URLs, sizes and manifests parse or say what is wrong",
          "[remote]") {
  using V = std::vector<std::string>;
  CHECK(remote::expand_braces("s3://b/x-{08..11}.tar") ==
        V{"s3://b/x-08.tar", "s3://b/x-09.tar", "s3://b/x-10.tar", "s3://b/x-11.tar"});
  CHECK(remote::expand_braces("a{1,2}b{0..1}") == V{"a1b0", "a1b1", "a2b0", "a2b1"});
  CHECK(remote::expand_braces("plain.tar") == V{"plain.tar"});
  CHECK_THROWS_WITH(remote::expand_braces("x{3..1}"), Contains("start is past its end"));
  CHECK_THROWS_WITH(remote::expand_braces("x{1..2"), Contains("'{' with no '}'"));
  CHECK_THROWS_WITH(remote::expand_braces("x{0..99999999}"), Contains("10,000,000"));
  CHECK(remote::is_url("https://h/a.tar"));
  CHECK(remote::is_url("s3://bucket/a.tar"));
  CHECK_FALSE(remote::is_url("/data/a.tar"));
  CHECK_FALSE(remote::is_url("file:///data/a.tar"));
  CHECK_FALSE(remote::is_url("dir/with://odd"));
  CHECK(mrd::parse_byte_size("20G") == (int64_t{20} << 30));
  CHECK(mrd::parse_byte_size("1.5MiB") == (int64_t{3} << 19));
  CHECK(mrd::parse_byte_size("4096") == 4096);
  CHECK(mrd::parse_byte_size("lots") == -1);
  CHECK(mrd::parse_byte_size("-1G") == -1);
  ::setenv("MPLOADER_CACHE_LIMIT", "ten", 1);
  CHECK_THROWS_WITH(mrd::resolve_cache_config({}), Contains("MPLOADER_CACHE_LIMIT is \"ten\""));
  ::setenv("MPLOADER_CACHE_LIMIT", "2M", 1);
  ::setenv("MPLOADER_CACHE_DIR", "/tmp/some-cache", 1);
  const mrd::CacheConfig c = mrd::resolve_cache_config({});
  ::unsetenv("MPLOADER_CACHE_LIMIT");
  ::unsetenv("MPLOADER_CACHE_DIR");
  CHECK(c.dir == "/tmp/some-cache");
  CHECK(c.limit_bytes == (2 << 20));
  CHECK_THROWS_WITH(mrd::parse_manifest("{}", "m.json"), Contains("m.json") && Contains("format"));
  // Found by the fuzzer: a "format" that is no string threw nlohmann's type_error.
  CHECK_THROWS_WITH(mrd::parse_manifest(R"({"format": 7})", "m.json"), Contains("format"));
  const std::string head = R"({"format": "mploader-manifest", "version": 1, "shards": [)";
  CHECK_THROWS_WITH(mrd::parse_manifest(head + R"({"name": "a", "bytes": 1}]})", "m"),
                    Contains("\"samples\""));
  CHECK_THROWS_WITH(mrd::parse_manifest(head + R"({"name": "a", "bytes": 1024, "samples": 1},
                                                  {"name": "a", "bytes": 1024, "samples": 1}]})",
                                        "m"), Contains("twice"));
  CHECK_THROWS_WITH(mrd::parse_manifest(head + R"({"name": "a", "bytes": 1024, "samples": 1,
                                                   "sha256": "xyz"}]})", "m"),
                    Contains("64 lowercase hex"));
  // A count no tar of that size can hold: its epoch would be planned for nothing real.
  CHECK_THROWS_WITH(mrd::parse_manifest(head + R"({"name": "a.tar", "bytes": 10240,
                                                   "samples": 1000000000000}]})", "m"),
                    Contains("counts 1000000000000 samples in shard \"a.tar\" of 10240 bytes") &&
                        Contains("mploader-manifest"));
  const mrd::Manifest m = mrd::parse_manifest(
      mrd::manifest_text({{"d/a.tar", 10240, 2, std::string(64, 'f')}, {"b.tar", 5120, 1, ""}}),
      "m");
  REQUIRE(m.shards.size() == 2);
  CHECK(m.shards[0].name == "d/a.tar");
  CHECK(m.shards[0].sha256 == std::string(64, 'f'));
  CHECK(m.shards[1].samples == 1);
}

}  // namespace test_remote_cache
