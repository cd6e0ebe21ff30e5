// mploader-pack's and PackedShards' checks of what they are given: a full disk, a finished pack
// packed again, an output folder inside the input, an index of another pack, and a tar whose
// size is not the description's.
#include <catch2/catch.hpp>
#include "components/shards/tests/pack_test_support.h"
#include "tests/tmpfs_mount.h"

#include "remote/sha256.h"

#include <mploader/mploader.h>
#include <mploader/shards/packed_shards.h>

#include <nlohmann/json.hpp>

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

// A pack of `samples` one-field samples "<prefix><i>" (so two prefixes of one length give
// packs of one shape: the same offsets, other bytes).
void write_text_pack(const std::string& dir, const std::string& prefix, int64_t samples) {
  namespace sd = shards::detail;
  sd::PackWriter writer({dir, 4096, samples, "{\"test\": 2}", true});
  const std::vector<sd::PackedField> fields{{"name", sd::PackedKind::kText}};
  for (int64_t i = 0; i < samples; ++i) {
    const std::string name = prefix + std::to_string(1000 + i);
    writer.add(fields, {name});
  }
  writer.finish();
}

std::string sha256_of_file(const std::string& path) {
  const std::string bytes = pack_file_bytes(path);
  remote::detail::Sha256 hash;
  hash.update(bytes.data(), bytes.size());
  return hash.hex();
}

int64_t first_sample_of(shards::PackedShards& data, size_t shard) {
  int64_t i = 0;
  while (data.shard_of(i) != shard) ++i;
  return i;
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

TEST_CASE("PackedShards: an index of another pack of the same shape is refused by its SHA-256 when first opened") {
  TempDir t("pack-foreign-index");
  write_text_pack(t.file("a"), "a-", 60);
  write_text_pack(t.file("b"), "b-", 60);
  const std::string index = t.file("a") + "/shard-000001.idx";
  const std::string expected = sha256_of_file(index);
  fs::copy_file(t.file("b") + "/shard-000001.idx", index, fs::copy_options::overwrite_existing);
  const std::string found = sha256_of_file(index);
  REQUIRE(expected != found);

  shards::PackedShards data(t.file("a"));
  REQUIRE(data.get(0).text("name") == "a-1000");  // shard 0 is its own
  const int64_t first_of_1 = first_sample_of(data, 1);
  try {
    data.get(first_of_1);
    FAIL("sample " << first_of_1 << " was read through another pack's index");
  } catch (const Error& e) {
    const std::string what = e.what();
    INFO(what);
    REQUIRE_THAT(what, Contains("mploader: PackedShards: "));
    REQUIRE_THAT(what, Contains("\"" + index + "\""));
    REQUIRE_THAT(what, Contains(expected));
    REQUIRE_THAT(what, Contains(found));
    REQUIRE_THAT(what, Contains("pack the data again"));
  }
}

TEST_CASE("PackedShards: a tar whose size is not the description's is named at open, with both sizes") {
  TempDir t("pack-tar-bytes");
  shard_test::write_tensor_pack(t.file("p"), 40, 4096);
  const std::string description = t.file("p") + "/mploader-pack.json";
  nlohmann::json j = nlohmann::json::parse(pack_file_bytes(description));
  const int64_t real = j["shards"][1]["tar_bytes"].get<int64_t>();
  REQUIRE(real == static_cast<int64_t>(fs::file_size(t.file("p") + "/shard-000001.tar")));
  j["shards"][1]["tar_bytes"] = real + 512;
  std::ofstream(description, std::ios::trunc) << j.dump();
  try {
    shards::PackedShards data(t.file("p"));
    FAIL("a pack whose description gives shard 1 " << real + 512 << " tar bytes was opened");
  } catch (const Error& e) {
    const std::string what = e.what();
    INFO(what);
    REQUIRE_THAT(what, Contains("mploader: PackedShards: "));
    REQUIRE_THAT(what, Contains("\"" + t.file("p") + "/shard-000001.tar\""));
    REQUIRE_THAT(what, Contains(std::to_string(real) + " bytes"));
    REQUIRE_THAT(what, Contains(std::to_string(real + 512)));
    REQUIRE_THAT(what, !Contains(".idx"));  // the index agrees with the tar: not blamed
  }
  // A tar removed is named at open too.
  j["shards"][1]["tar_bytes"] = real;
  std::ofstream(description, std::ios::trunc) << j.dump();
  fs::remove(t.file("p") + "/shard-000002.tar");
  REQUIRE_THROWS_WITH(shards::PackedShards(t.file("p")),
                      Contains("\"" + t.file("p") + "/shard-000002.tar\""));
}
