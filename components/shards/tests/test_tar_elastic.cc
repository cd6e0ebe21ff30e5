// TarShards resumed on another world size (include/mploader/elastic.h): checkpointed on 4 ranks
// and finished on 2, and on 2 then 3 then 2, a worker of each rank killed, with the samples
// checked against what they say of themselves: every sample exactly once, equal steps.
#include "shard_test_support.h"
#include "tests/elastic_harness.h"

#include <catch2/catch.hpp>

#include <mploader/loader.h>
#include <mploader/shards/tar_shards.h>

namespace test_tar_elastic {

using namespace shard_test;
using mploader::shards::TarShards;
using mploader::shards::TarShardsOptions;

TEST_CASE("shards: TarShards resumes on another world size, every sample once",
          "[shards][elastic][process]") {
  TempDir dir("elastic");
  const std::vector<std::string> paths = write_corpus(dir, {31, 12, 40, 9, 27, 18, 35, 22});
  TarShardsOptions to;
  to.keys = {"idx"};
  to.int_keys = {"idx"};
  const elastic_harness::MakeLoader make = [&](int64_t world, int64_t rank) {
    mploader::LoaderOptions o;
    o.batch_size = 7;
    o.num_workers = 2;
    o.shuffle = true;
    o.shuffle_buffer = 6;
    o.seed = 12;
    o.world_size = world;
    o.rank = rank;
    o.max_restarts_per_epoch = 2;
    o.crash_dir = dir.file("crashes");
    o.timeout = std::chrono::seconds(60);
    return std::make_unique<mploader::Loader>(std::make_shared<TarShards>(paths, to), o);
  };
  // Each sample names itself: a batch's "idx" is its indices.
  auto probe = make(1, 0);
  for (mploader::Batch& b : *probe) {
    for (size_t r = 0; r < b.size(); ++r) {
      REQUIRE(b["idx"][static_cast<int64_t>(r)].item<int64_t>() == b.indices()[r]);
    }
  }
  elastic_harness::check_resizes(make, 194, 2, 4);
}

}  // namespace test_tar_elastic
