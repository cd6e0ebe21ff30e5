// mploader-pack's checks of what it is given: a full disk, a finished pack packed again, and an
// output folder inside the input.
#include <catch2/catch.hpp>
#include "components/shards/tests/pack_test_support.h"
#include "tests/tmpfs_mount.h"

#include <mploader/mploader.h>
#include <mploader/shards/packed_shards.h>

#include <filesystem>
#include <fstream>
#include <string>

using namespace mploader;
using Catch::Contains;
using shard_test::pack_file_bytes;
using shard_test::require_same_pack_files;
using shard_test::TempDir;
namespace fs = std::filesystem;

namespace {

// The names in `dir` that a failed write leaves behind: unfinished shards and temporary files.
std::vector<std::string> leftovers(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string ext = e.path().extension().string();
    if (ext == ".part" || ext == ".tmp") out.push_back(e.path().filename().string());
  }
  return out;
}

uintmax_t folder_bytes(const std::string& dir) {
  uintmax_t total = 0;
  for (const auto& e : fs::directory_iterator(dir)) total += e.file_size();
  return total;
}

}  // namespace

TEST_CASE("mploader-pack: a full disk stops the pack with no .part left, and it resumes over a stale .part") {
  TempDir t("pack-full");
  shard_test::write_image_folder(t.file("in"), 4, 10);
  const std::string options = " --shard-size 16KB --workers 1";
  REQUIRE(shard_test::run_pack(t.file("in") + " -o " + t.file("whole") + options,
                               t.file("whole.log")) == 0);
  // Room for about half the pack: some shards are recorded, then a write fails.
  const uintmax_t half_kib = folder_bytes(t.file("whole")) / 2 / 1024;
  REQUIRE(half_kib >= 64);  // a tmpfs of size 0 would have no limit
  TmpfsMount tmpfs(std::to_string(half_kib / 4 * 4) + "k");
  if (!tmpfs.ok()) {
    WARN("skipped: " << tmpfs.why_not());
    return;
  }
  const std::string full = tmpfs.path() + "/out";
  REQUIRE(shard_test::run_pack(t.file("in") + " -o " + full + options, t.file("full.log")) == 1);
  const std::string log = pack_file_bytes(t.file("full.log"));
  INFO(log);
  REQUIRE_THAT(log, Contains("No space left on device"));
  REQUIRE_THAT(log, Contains("bytes free"));
  REQUIRE(leftovers(full).empty());
  REQUIRE(fs::exists(full + "/mploader-pack.progress.json"));

  // Moved to a disk with room, with a stale part as a kill -9 mid-write leaves: resumed, the
  // part removed, and the pack is the one never stopped.
  fs::copy(full, t.file("moved"));
  std::ofstream(t.file("moved") + "/shard-000099.tar.part") << "half a shard";
  REQUIRE(shard_test::run_pack(t.file("in") + " -o " + t.file("moved") + options,
                               t.file("moved.log")) == 0);
  REQUIRE_THAT(pack_file_bytes(t.file("moved.log")), Contains("resuming at sample"));
  require_same_pack_files(t.file("whole"), t.file("moved"));
}

TEST_CASE("mploader-pack: the same command over a finished pack says it is complete and exits 0, and other options are refused") {
  TempDir t("pack-again");
  shard_test::write_image_folder(t.file("in"), 2, 5);
  const std::string command = t.file("in") + " -o " + t.file("p") + " --shard-size 16KB";
  REQUIRE(shard_test::run_pack(command, t.file("first.log")) == 0);
  fs::copy(t.file("p"), t.file("before"));

  REQUIRE(shard_test::run_pack(command, t.file("again.log")) == 0);
  const std::string again = pack_file_bytes(t.file("again.log"));
  REQUIRE_THAT(again, Contains("already complete"));
  REQUIRE_THAT(again, Contains("11 samples"));
  require_same_pack_files(t.file("before"), t.file("p"));

  REQUIRE(shard_test::run_pack(command + " --quality 50", t.file("other.log")) == 2);
  REQUIRE_THAT(pack_file_bytes(t.file("other.log")), Contains("holds a finished pack"));
  REQUIRE_THAT(pack_file_bytes(t.file("other.log")), Contains("--overwrite"));
  require_same_pack_files(t.file("before"), t.file("p"));
}

TEST_CASE("mploader-pack: an output folder inside the input folder is refused at the start, however it is spelled") {
  TempDir t("pack-inside");
  shard_test::write_image_folder(t.file("in"), 2, 3);
  const std::string inside = t.file("in") + "/../in/out";
  REQUIRE(shard_test::run_pack(t.file("in") + " -o " + inside, t.file("inside.log")) == 2);
  const std::string log = pack_file_bytes(t.file("inside.log"));
  INFO(log);
  REQUIRE_THAT(log, Contains("is inside the input folder"));
  REQUIRE_THAT(log, Contains("\"" + inside + "\""));
  REQUIRE_THAT(log, Contains("\"" + t.file("in") + "\""));
  REQUIRE_FALSE(fs::exists(t.file("in") + "/out"));
  // The input folder itself, and one beside it whose name starts the same.
  REQUIRE(shard_test::run_pack(t.file("in") + " -o " + t.file("in") + "/.", t.file("same.log")) == 2);
  REQUIRE_THAT(pack_file_bytes(t.file("same.log")), Contains("is inside the input folder"));
  REQUIRE(shard_test::run_pack(t.file("in") + " -o " + t.file("in-packed"), t.file("beside.log")) == 0);
}
