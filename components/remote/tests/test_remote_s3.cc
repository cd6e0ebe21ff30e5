// Tar shards in an S3-compatible bucket (moto_server on 127.0.0.1, with IAM authentication on,
// so every request must be signed right): listed from the bucket's prefix, counted from the
// manifest beside them, read by a Loader with every sample once; and wrong credentials refused
// at once, with the source of the credentials named.
#include <catch2/catch.hpp>

#include "components/remote/tests/aws_environment.h"
#include "components/shards/tests/epoch_check.h"
#include "components/remote/tests/remote_test_support.h"
#include "components/remote/tests/s3_server.h"

#include <mploader/loader.h>
#include <mploader/token_stream.h>

#include <ATen/ATen.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>

namespace test_remote_s3 {

using namespace shard_test;
using mploader::shards::TarShards;
using Catch::Matchers::Contains;

namespace {

// The corpus written locally, and a bucket "corpus" holding it under "train/".
struct Bucket {
  // `manifest`: with mploader-manifest.json beside the shards; else as WebDataset publishes.
  explicit Bucket(const std::vector<int64_t>& sizes, bool manifest = true)
      : local("s3-local"), state("s3-state"), cache("s3-cache") {
    paths = write_corpus(local, sizes);
    std::vector<std::string> files = paths;
    if (manifest) {
      write_manifest(local.path().string(), paths);
      files.push_back(local.file("mploader-manifest.json"));
    }
    server.emplace(state.path().string(), "corpus", "train/", files);
  }
  mploader::shards::TarShardsOptions options() const {
    mploader::shards::TarShardsOptions o;
    o.keys = {"idx", "txt"};
    o.int_keys = {"idx"};
    o.remote.cache_dir = cache.path().string();
    o.remote.endpoint_url = server->endpoint();
    o.remote.stall_timeout_s = 5;
    return o;
  }
  // The bucket's credentials, in the environment for as long as `env` lives.
  void sign_in(AwsEnvironment& env) const { server->sign_in(env); }
  // The shards under "train/", named by the prefix alone.
  std::shared_ptr<TarShards> by_prefix() const {
    return std::make_shared<TarShards>(std::vector<std::string>{"s3://corpus/train/"}, options());
  }
  TempDir local, state, cache;
  std::vector<std::string> paths;
  std::optional<MotoServer> server;
};

// Two workers, batches of 4 padded to the longest text.
mploader::LoaderOptions two_workers() {
  mploader::LoaderOptions lo;
  lo.num_workers = 2;
  lo.batch_size = 4;
  lo.collate = mploader::pad_collate();
  return lo;
}

}  // namespace

TEST_CASE("remote: a Loader reads tar shards from an S3 bucket given only its URL and "
          "credentials", "[remote][s3][process]") {
  Bucket bucket({9, 14, 5, 11});
  if (!bucket.server->ok()) {
    WARN("skipped: " << bucket.server->why_not());
    return;
  }
  AwsEnvironment env;
  bucket.sign_in(env);
  auto data = bucket.by_prefix();
  REQUIRE(data->paths() == std::vector<std::string>{
                               "s3://corpus/train/shard-0.tar", "s3://corpus/train/shard-1.tar",
                               "s3://corpus/train/shard-2.tar", "s3://corpus/train/shard-3.tar"});
  REQUIRE(data->size() == 39);
  // The whole bucket, named without a prefix, is listed too; a prefix with no shard is an error.
  CHECK(TarShards({"s3://corpus"}, bucket.options()).paths() == data->paths());
  CHECK_THROWS_WITH(TarShards({"s3://corpus/nothing/"}, bucket.options()),
                    Contains("\"s3://corpus/nothing/\" holds no object whose name ends in "
                             "\".tar\""));
  mploader::LoaderOptions lo = two_workers();
  lo.shuffle = true;
  lo.shuffle_buffer = 8;
  mploader::Loader loader(data, lo);
  check_once(run_epoch(loader, 0), 39);
}

TEST_CASE("remote: shards in a bucket with no manifest are counted into the cache, then read",
          "[remote][s3][process]") {
  Bucket bucket({9, 14, 5, 11}, /*manifest=*/false);
  if (!bucket.server->ok()) {
    WARN("skipped: " << bucket.server->why_not());
    return;
  }
  AwsEnvironment env;
  bucket.sign_in(env);
  auto data = bucket.by_prefix();
  REQUIRE(data->size() == 39);
  mploader::Loader loader(data, two_workers());
  check_once(run_epoch(loader, 0), 39);
  // A bucket that does not exist is said to be missing, not to lack a manifest.
  CHECK_THROWS_WITH(TarShards({"s3://no-such-bucket/train/shard-0.tar"}, bucket.options()),
                    Contains("NoSuchBucket") && Contains("does not exist") &&
                        !Contains("no manifest"));
}

TEST_CASE("remote: TokenStream follows the S3 endpoint the environment names now",
          "[remote][s3][tokens]") {
  TempDir local("s3-tokens-local"), state("s3-tokens-state");
  const std::string file = local.file("tok.bin");
  std::ofstream(file, std::ios::binary) << std::string(4096, '\0');
  MotoServer server(state.path().string(), "corpus", "train/", {file});
  if (!server.ok()) {
    WARN("skipped: " << server.why_not());
    return;
  }
  AwsEnvironment env;
  server.sign_in(env);
  mploader::TokenStreamOptions to;
  to.context = 16;
  to.cache_dir = local.file("cache");
  // First an endpoint under which the bucket is not: the store says so at once.
  env.set("AWS_ENDPOINT_URL", server.endpoint() + "/elsewhere");
  CHECK_THROWS_WITH(mploader::TokenStream({"s3://corpus/train/tok.bin"}, to),
                    Contains("elsewhere"));
  // Then the right one, in the same process: a new transport, not the first one's.
  env.set("AWS_ENDPOINT_URL", server.endpoint());
  mploader::TokenStream data({"s3://corpus/train/tok.bin"}, to);
  CHECK(data.size() > 0);
}

TEST_CASE("remote: wrong S3 credentials are refused at the first read, naming their source",
          "[remote][s3]") {
  Bucket bucket({4, 4});
  if (!bucket.server->ok()) {
    WARN("skipped: " << bucket.server->why_not());
    return;
  }
  AwsEnvironment env;
  env.set("AWS_ACCESS_KEY_ID", bucket.server->key_id());
  env.set("AWS_SECRET_ACCESS_KEY", "not-the-secret");
  const auto start = std::chrono::steady_clock::now();
  REQUIRE_THROWS_WITH(TarShards({"s3://corpus/train/shard-{0..1}.tar"}, bucket.options()),
                      Contains("HTTP 403") && Contains("AWS_ACCESS_KEY_ID") &&
                          Contains("mploader-manifest.json") && Contains("bucket \"corpus\""));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
  // A listing refused names the bucket, not the endpoint.
  REQUIRE_THROWS_WITH(TarShards({"s3://corpus/train/"}, bucket.options()),
                      Contains("HTTP 403") && Contains("bucket \"corpus\"") &&
                          Contains("listing the prefix \"train/\""));
  // The right key from a profile of a credentials file, and none in the environment.
  TempDir home("s3-home");
  std::filesystem::create_directories(home.path() / ".aws");
  std::ofstream(home.file(".aws/credentials"))
      << "[default]\naws_access_key_id = wrong\naws_secret_access_key = wrong\n\n[reader]\n"
      << "aws_access_key_id = " << bucket.server->key_id() << "\naws_secret_access_key = "
      << bucket.server->secret() << "\n";
  env.unset("AWS_ACCESS_KEY_ID");
  env.unset("AWS_SECRET_ACCESS_KEY");
  env.set("HOME", home.path().string());
  env.set("AWS_PROFILE", "reader");
  TarShards data({"s3://corpus/train/shard-{0..1}.tar"}, bucket.options());
  CHECK(data.get(5)["idx"].item<int64_t>() == 5);
}

}  // namespace test_remote_s3
