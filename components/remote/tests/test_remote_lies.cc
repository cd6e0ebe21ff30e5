// Servers that lie about what they send (components/remote/tests/lying_http_server.py): a download cut
// short is resumed, and the resumed response is another version of the object, another range
// than the one asked for, or a redirect loop. Each ends in an error that names the URL and what
// came, never in bytes of two versions spliced into one file.
#include <catch2/catch.hpp>

#include "components/remote/tests/lying_server.h"
#include "components/shards/tests/shard_test_support.h"

#include <mploader/loader.h>
#include <mploader/remote/remote.h>
#include <mploader/token_stream.h>

#include "remote/download.h"
#include "remote/http_transport.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <optional>

namespace test_remote_lies {

using namespace shard_test;
using Catch::Matchers::Contains;
namespace mrd = mploader::remote::detail;

namespace {

constexpr int64_t kSize = 1000;  // the object's bytes; the first response stops at 500

// What download_to_fd made of the object the server serves in `mode`: its error's text, or ""
// and the bytes written.
struct Outcome {
  std::string error;
  std::vector<uint8_t> bytes;
};

std::optional<Outcome> download(const std::string& mode, const TempDir& state,
                                std::unique_ptr<LyingServer>& server,
                                const mploader::remote::RemoteOptions& options) {
  server = std::make_unique<LyingServer>(state.path().string(), mode, kSize);
  if (!server->ok()) return std::nullopt;
  mrd::HttpTransport transport(options);
  const std::string file = state.file("download-" + mode);
  const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fd >= 0);
  Outcome out;
  try {
    mrd::download_to_fd(transport, server->url(), mrd::ExpectedObject{}, fd, options);
  } catch (const mploader::remote::TransportError& e) {
    out.error = e.what();
  }
  ::close(fd);
  std::ifstream in(file, std::ios::binary);
  out.bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return out;
}

std::vector<uint8_t> version1() {
  std::vector<uint8_t> v(kSize);
  for (int64_t i = 0; i < kSize; ++i) v[i] = LyingServer::byte_of_version1(i);
  return v;
}

// Two retries: the first response is cut short, the second is the lie.
mploader::remote::RemoteOptions two_retries() {
  mploader::remote::RemoteOptions options;
  options.max_retries = 2;
  return options;
}

// Declares `state`, `server` and `outcome`, or skips the test without a server.
#define DOWNLOAD_OR_SKIP(outcome, mode, options)                                 \
  TempDir state("lies-" mode);                                                   \
  std::unique_ptr<LyingServer> server;                                           \
  const std::optional<Outcome> outcome = download(mode, state, server, options); \
  if (!outcome) {                                                                \
    WARN("skipped: " << server->why_not());                                      \
    return;                                                                      \
  }

}  // namespace

TEST_CASE("remote: an honest server's resumed download is the object, byte for byte",
          "[remote][process]") {
  DOWNLOAD_OR_SKIP(got, "honest", two_retries());
  CHECK(got->error.empty());
  CHECK(got->bytes == version1());
}

TEST_CASE("remote: a resume that gets another ETag, If-Match ignored, is refused",
          "[remote][process]") {
  DOWNLOAD_OR_SKIP(got, "etag", two_retries());
  CHECK_THAT(got->error, Contains(server->url()) && Contains("from byte 500") &&
                             Contains("changed while it was downloaded") &&
                             Contains("ETag was \"v1\" and is \"v2\" now") &&
                             Contains("ignored If-Match"));
}

TEST_CASE("remote: a resume that gets another Last-Modified, with no ETag, is refused",
          "[remote][process]") {
  DOWNLOAD_OR_SKIP(got, "lastmod", two_retries());
  CHECK_THAT(got->error, Contains(server->url()) && Contains("changed while it was downloaded") &&
                             Contains("Last-Modified was Mon, 02 Nov 2026 10:00:00 GMT and is "
                                      "Tue, 03 Nov 2026 11:00:00 GMT now"));
}

TEST_CASE("remote: a 206 of another range than the one asked for is refused",
          "[remote][process]") {
  DOWNLOAD_OR_SKIP(got, "range", two_retries());
  CHECK_THAT(got->error, Contains(server->url()) && Contains("asked for bytes 500-") &&
                             Contains("206 with Content-Range bytes 0-499/1000") &&
                             Contains("does not honour ranges"));
}

TEST_CASE("remote: a redirect loop fails after 10 redirects, not retried",
          "[remote][process]") {
  DOWNLOAD_OR_SKIP(got, "redirect", two_retries());
  CHECK_THAT(got->error, Contains(server->url()) && Contains("more than 10 redirects") &&
                             Contains("redirects in a loop"));
  CHECK_THAT(got->error, !Contains("gave up after"));
}

TEST_CASE("remote: a server that trickles 2 bytes a second times out, naming the URL",
          "[remote][process]") {
  mploader::remote::RemoteOptions once;
  once.max_retries = 0;
  once.stall_timeout_s = 2;
  const auto start = std::chrono::steady_clock::now();
  DOWNLOAD_OR_SKIP(got, "trickle", once);
  CHECK_THAT(got->error, Contains(server->url()) && Contains("timed out") &&
                             Contains("fewer than 1024 bytes a second arrived for 2 s"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(15));
}

TEST_CASE("remote: TokenStream by URL over a server that switches objects mid-download fails "
          "with the URL, never delivers the other object's tokens",
          "[remote][tokens][process]") {
  TempDir state("lies-tokens"), cache("lies-tokens-cache");
  LyingServer server(state.path().string(), "etag", kSize);
  if (!server.ok()) {
    WARN("skipped: " << server.why_not());
    return;
  }
  mploader::TokenStreamOptions to;
  to.context = 16;
  to.cache_dir = cache.path().string();
  auto data = std::make_shared<mploader::TokenStream>(std::vector<std::string>{server.url()}, to);
  mploader::LoaderOptions o;
  o.num_workers = 2;
  o.batch_size = 4;
  mploader::Loader loader(data, o);
  int64_t batches = 0;
  auto whole_epoch = [&] {
    for (mploader::Batch& b : loader) {
      (void)b;
      ++batches;
    }
  };
  REQUIRE_THROWS_WITH(whole_epoch(), Contains(server.url()) &&
                                         Contains("changed while it was downloaded"));
  CHECK(batches == 0);
}

}  // namespace test_remote_lies
