// PackedShards by URL: a pack served by nginx read in DistributedSampler's order on 2 ranks x
// 2 workers with ranged reads merged per batch; a byte a server changed caught by the sample's
// SHA-256; and a pack in an S3 bucket (moto) read whole shard by whole shard under the block
// shuffle through a shard cache smaller than the pack, every sample once.
#include <catch2/catch.hpp>

#include "components/remote/tests/aws_environment.h"
#include "components/remote/tests/http_server.h"
#include "components/remote/tests/s3_server.h"
#include "components/shards/tests/pack_test_support.h"

#include <mploader/block_sampler.h>
#include <mploader/distributed_sampler.h>
#include <mploader/loader.h>
#include <mploader/shards/packed_shards.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace test_remote_packed {

using namespace shard_test;
using mploader::shards::PackedShards;
using Catch::Matchers::Contains;

namespace {

// Every index a Loader over `data` with `sampler` hands out, each row's values checked.
std::vector<int64_t> read_all(std::shared_ptr<PackedShards> data,
                              std::shared_ptr<mploader::Sampler> sampler, uint64_t epoch) {
  mploader::LoaderOptions lo;
  lo.batch_size = 8;
  lo.num_workers = 2;
  lo.sampler = std::move(sampler);
  mploader::Loader loader(data, lo);
  loader.set_epoch(epoch);
  std::vector<int64_t> order;
  for (mploader::Batch& b : loader) {
    for (size_t r = 0; r < b.size(); ++r) {
      const int64_t i = b.indices()[r];
      order.push_back(i);
      REQUIRE(b["x"][static_cast<int64_t>(r)][0].item<float>() == static_cast<float>(i));
      REQUIRE(std::string(b.text("name")[r]) == "sample-" + std::to_string(i));
    }
  }
  return order;
}

std::vector<std::string> files_of(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// The bytes of the files in `dir` (the shard cache's checksum records, hidden, left out).
int64_t folder_bytes(const std::string& dir) {
  int64_t total = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().filename().string()[0] != '.') {
      total += static_cast<int64_t>(e.file_size());
    }
  }
  return total;
}

}  // namespace

TEST_CASE("remote: a pack served over HTTP reads in DistributedSampler's order on 2 ranks x 2 "
          "workers, by merged ranges", "[remote][packed][process]") {
  TempDir root("packed-root"), state("packed-state"), cache("packed-cache");
  write_tensor_pack(root.file("p"), 301, 16384);
  NginxServer server(root.path().string(), state.path().string());
  if (!server.ok()) {
    WARN("skipped: " << server.why_not());
    return;
  }
  mploader::shards::PackedShardsOptions o;
  o.remote.cache_dir = cache.path().string();
  auto data = std::make_shared<PackedShards>(server.url("p"), o);
  REQUIRE(data->size() == 301);
  for (int rank = 0; rank < 2; ++rank) {
    auto sampler = std::make_shared<mploader::DistributedSampler>(2, rank, true, 4);
    REQUIRE(read_all(data, sampler, 1) == sampler->indices(301, 1));
  }
  // In this process: a batch of 16 neighbours is one request per shard it touches, and no tar
  // lands in the cache.
  std::vector<int64_t> batch(16);
  std::iota(batch.begin(), batch.end(), 40);
  data->prepare_batch(batch.data(), batch.size());
  for (int64_t i : batch) REQUIRE(data->get(i).text("name") == "sample-" + std::to_string(i));
  CHECK(data->range_requests() == static_cast<int64_t>(data->shard_of(55) - data->shard_of(40) + 1));
  for (const std::string& f : files_of(cache.path().string())) {
    CHECK(f.find(".tar") == std::string::npos);
  }

  // A byte the server now sends differently: the sample's SHA-256 says so.
  const std::string tar = root.file("p") + "/shard-000000.tar";
  std::string bytes;
  {
    std::ifstream in(tar, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  bytes[512 + 20] = static_cast<char>(bytes[512 + 20] ^ 1);
  std::ofstream(tar, std::ios::binary | std::ios::trunc) << bytes;
  PackedShards fresh(server.url("p"), o);
  REQUIRE_THROWS_WITH(fresh.get(0), Contains("do not match the SHA-256 its index records") &&
                                        Contains(server.url("p/shard-000000.tar")));
  REQUIRE_THROWS_WITH(PackedShards(server.url("nothing"), o), Contains("cannot read"));
}

TEST_CASE("remote: a pack in an S3 bucket reads whole shards under the block shuffle through a "
          "cache smaller than the pack, every sample once", "[remote][packed][s3][process]") {
  TempDir local("packed-s3-local"), state("packed-s3-state"), cache("packed-s3-cache");
  write_tensor_pack(local.file("p"), 400, 8192);
  MotoServer server(state.path().string(), "packs", "train/", files_of(local.file("p")));
  if (!server.ok()) {
    WARN("skipped: " << server.why_not());
    return;
  }
  AwsEnvironment env;
  server.sign_in(env);
  const int64_t pack_bytes = folder_bytes(local.file("p"));
  mploader::shards::PackedShardsOptions o;
  o.remote_read = mploader::shards::RemoteRead::kWholeShards;
  o.max_held_shards = 2;
  o.remote.cache_dir = cache.path().string();
  o.remote.endpoint_url = server.endpoint();
  o.remote.cache_limit_bytes = pack_bytes / 2;
  auto data = std::make_shared<PackedShards>("s3://packs/train", o);
  REQUIRE(data->size() == 400);
  REQUIRE(data->num_shards() > 8);
  std::vector<int64_t> all;
  for (int rank = 0; rank < 2; ++rank) {
    auto sampler = std::make_shared<mploader::BlockShuffleSampler>(
        40, 3, 2, rank, false, data->shard_sizes());
    const std::vector<int64_t> order = read_all(data, sampler, 0);
    REQUIRE(order == sampler->indices(400, 0));
    all.insert(all.end(), order.begin(), order.end());
  }
  std::sort(all.begin(), all.end());
  std::vector<int64_t> expected(400);
  std::iota(expected.begin(), expected.end(), 0);
  REQUIRE(all == expected);
  CHECK(folder_bytes(cache.path().string()) <= pack_bytes / 2);
}

#ifdef MPLOADER_PACK_BIN
TEST_CASE("remote: mploader-pack uploads a pack to an HTTP server that takes PUT and to an S3 "
          "bucket, the same bytes as a local pack", "[remote][packed][s3][process]") {
  TempDir in("upload-in"), root("upload-root"), state("upload-state"), s3("upload-s3"),
      cache("upload-cache");
  write_image_folder(in.file("photos"), 2, 5);
  REQUIRE(run_pack(in.file("photos") + " -o " + in.file("local") + " --shard-size 32KB",
                   in.file("local.log")) == 0);
  NginxServer server(root.path().string(), state.path().string());
  if (!server.ok()) {
    WARN("skipped: " << server.why_not());
    return;
  }
  REQUIRE(run_pack(in.file("photos") + " -o " + server.url("packs/photos/") +
                       " --shard-size 32KB --stage " + in.file("stage"),
                   in.file("http.log")) == 0);
  for (const std::string& f : files_of(in.file("local"))) {
    std::ifstream a(f, std::ios::binary), b(root.file("packs/photos/" + fs::path(f).filename().string()),
                                            std::ios::binary);
    REQUIRE(std::string(std::istreambuf_iterator<char>(a), {}) ==
            std::string(std::istreambuf_iterator<char>(b), {}));
  }
  REQUIRE_FALSE(fs::exists(in.file("stage")));  // the stage is gone once all is uploaded

  MotoServer bucket(s3.path().string(), "packs", "unused/", {});
  if (!bucket.ok()) {
    WARN("skipped: " << bucket.why_not());
    return;
  }
  AwsEnvironment env;
  bucket.sign_in(env);
  REQUIRE(run_pack(in.file("photos") + " -o s3://packs/photos --shard-size 32KB --endpoint-url " +
                       bucket.endpoint(),
                   in.file("s3.log")) == 0);
  mploader::shards::PackedShardsOptions o;
  o.remote.cache_dir = cache.path().string();
  o.remote.endpoint_url = bucket.endpoint();
  PackedShards remote("s3://packs/photos", o), local(in.file("local"));
  REQUIRE(remote.size() == local.size());
  REQUIRE(remote.num_shards() == local.num_shards());
  for (int64_t i = 0; i < static_cast<int64_t>(local.size()); ++i) {
    REQUIRE(at::equal(remote.get(i)["image"], local.get(i)["image"]));
  }
  // A server that takes no PUT is named, with the status.
  REQUIRE(run_pack(in.file("photos") + " -o http://127.0.0.1:1/x/ --shard-size 32KB --stage " +
                       in.file("stage2"),
                   in.file("refused.log")) == 1);
  std::ifstream log(in.file("refused.log"));
  REQUIRE_THAT(std::string(std::istreambuf_iterator<char>(log), {}),
               Contains("PUT http://127.0.0.1:1/x/shard-000000.idx"));
}
#endif

}  // namespace test_remote_packed
