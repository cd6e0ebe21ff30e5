// TokenStream over token files named by URL, from a real nginx on 127.0.0.1: the same windows
// as from the local files, each file downloaded once into the shard cache, with fork and spawn.
#include <catch2/catch.hpp>

#include "components/shards/tests/epoch_check.h"
#include "components/remote/tests/http_server.h"

#include <mploader/loader.h>
#include <mploader/token_stream.h>

#include <fstream>
#include <sstream>

namespace test_remote_tokens {

using namespace shard_test;

namespace {

// Token i of a file is (i + first) % 60000, so a window names its own start.
std::string write_tokens(const std::string& path, int64_t n, int64_t first) {
  std::ofstream out(path, std::ios::binary);
  for (int64_t i = 0; i < n; ++i) {
    const auto id = static_cast<uint16_t>((i + first) % 60000);
    out.write(reinterpret_cast<const char*>(&id), sizeof id);
  }
  return path;
}

// Each batch's indices and "input", in delivery order.
std::vector<std::pair<std::vector<int64_t>, at::Tensor>> epoch(
    std::shared_ptr<mploader::TokenStream> data, mploader::StartMethod method) {
  mploader::LoaderOptions o;
  o.num_workers = 2;
  o.batch_size = 4;
  o.shuffle = true;
  o.seed = 11;
  o.start_method = method;
  mploader::Loader loader(std::move(data), o);
  std::vector<std::pair<std::vector<int64_t>, at::Tensor>> out;
  for (mploader::Batch& b : loader) out.emplace_back(b.indices(), b["input"].clone());
  return out;
}

// GETs that sent a file whole (the size probes ask for one byte: a 206).
int whole_gets(NginxServer& server, const std::string& uri, int64_t bytes) {
  int n = 0;
  for (const std::string& line : server.requests()) {
    std::istringstream words(line);
    std::string method, path;
    int status = 0;
    int64_t sent = 0;
    words >> method >> path >> status >> sent;
    n += method == "GET" && path == uri && status == 200 && sent == bytes;
  }
  return n;
}

}  // namespace

TEST_CASE("remote: TokenStream reads token files by URL, the same windows as the local files",
          "[remote][tokens][process]") {
  TempDir root("tokens-root"), state("tokens-state"), cache("tokens-cache");
  const std::vector<std::string> local = {write_tokens(root.file("a.bin"), 3000, 0),
                                          write_tokens(root.file("b.bin"), 2000, 7)};
  NginxServer server(root.path().string(), state.path().string());
  if (!server.ok()) {
    WARN("skipped: " << server.why_not());
    return;
  }
  mploader::TokenStreamOptions to;
  to.context = 32;
  to.windows_per_shard = 10;
  to.cache_dir = cache.path().string();
  auto from_disk = std::make_shared<mploader::TokenStream>(local, to);
  auto by_url = std::make_shared<mploader::TokenStream>(
      std::vector<std::string>{server.url("a.bin"), server.url("b.bin")}, to);
  REQUIRE(by_url->file_tokens() == from_disk->file_tokens());
  const auto want = epoch(from_disk, mploader::StartMethod::kFork);
  const auto method = GENERATE(mploader::StartMethod::kFork, mploader::StartMethod::kSpawn);
  const auto got = epoch(by_url, method);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    REQUIRE(got[i].first == want[i].first);
    REQUIRE(at::equal(got[i].second, want[i].second));
  }
  // One download per file, whatever the workers and the start method; later runs read the
  // cache.
  CHECK(whole_gets(server, "/a.bin", 6000) == 1);
  CHECK(whole_gets(server, "/b.bin", 4000) == 1);
}

TEST_CASE("remote: TokenStream names a missing URL and its status", "[remote][tokens]") {
  TempDir root("tokens-404-root"), state("tokens-404-state");
  NginxServer server(root.path().string(), state.path().string());
  if (!server.ok()) {
    WARN("skipped: " << server.why_not());
    return;
  }
  CHECK_THROWS_WITH(mploader::TokenStream({server.url("missing.bin")}),
                    Catch::Contains(server.url("missing.bin")) && Catch::Contains("404"));
}

TEST_CASE("remote: a cache folder that cannot be made is named in a worker, not a segfault",
          "[remote][tokens][process]") {
  TempDir root("tokens-nocache-root"), state("tokens-nocache-state");
  write_tokens(root.file("a.bin"), 3000, 0);
  NginxServer server(root.path().string(), state.path().string());
  if (!server.ok()) {
    WARN("skipped: " << server.why_not());
    return;
  }
  const std::string not_a_folder = state.file("regular-file");
  std::ofstream(not_a_folder) << "x";
  mploader::TokenStreamOptions to;
  to.context = 64;
  to.cache_dir = not_a_folder + "/cache";  // under a regular file: cannot be made
  auto data = std::make_shared<mploader::TokenStream>(
      std::vector<std::string>{server.url("a.bin")}, to);
  mploader::LoaderOptions o;
  o.num_workers = 1;
  o.batch_size = 8;
  mploader::Loader loader(data, o);
  REQUIRE_THROWS_WITH(loader.next(), Catch::Matchers::Contains(to.cache_dir) &&
                                         Catch::Matchers::Contains("cannot be made or written"));
}

}  // namespace test_remote_tokens
