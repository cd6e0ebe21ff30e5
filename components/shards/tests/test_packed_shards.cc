// PackedShards over local packs, and mploader-pack as a user runs it: an image folder packed
// twice to the same bytes, a pack killed and resumed, every sample read back by index in
// DistributedSampler's order, and damage named.
#include <catch2/catch.hpp>
#include "components/shards/tests/pack_test_support.h"

#include <mploader/mploader.h>
#include <mploader/shards/packed_shards.h>
#include <mploader/vision/decode.h>
#include <mploader/vision/image_folder.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>
#include <thread>

using namespace mploader;
using Catch::Contains;
using shard_test::TempDir;
namespace fs = std::filesystem;

using shard_test::pack_file_bytes;
using shard_test::require_same_pack_files;

TEST_CASE("mploader-pack: an image folder packs to the same bytes twice, images bounded and labels kept") {
  TempDir t("pack-images");
  shard_test::write_image_folder(t.file("in"), 3, 6);
  REQUIRE(shard_test::run_pack(t.file("in") + " -o " + t.file("a") + " --shard-size 64KB",
                               t.file("a.log")) == 0);
  REQUIRE(shard_test::run_pack(t.file("in") + " -o " + t.file("b") +
                                   " --shard-size 64KB --workers 1 --batch 3",
                               t.file("b.log")) == 0);
  require_same_pack_files(t.file("a"), t.file("b"));

  const vision::ImageFolder folder(t.file("in"), vision::Compose({vision::Resize(vision::Size2{8, 8})}));
  shards::PackedShards packed(t.file("a"));
  REQUIRE(packed.size() == folder.size());
  REQUIRE(packed.num_shards() > 2);
  REQUIRE(packed.fields() == std::vector<std::string>{"image:image", "label:int"});
  vision::ImageDecoder decoder;
  for (int64_t i = 0; i < static_cast<int64_t>(packed.size()); ++i) {
    const Sample s = packed.get(i);
    REQUIRE(s["label"].item<int64_t>() == folder.label(i));
    const at::Tensor jpeg = s["image"];
    const auto info = decoder.info(jpeg.data_ptr<uint8_t>(), static_cast<size_t>(jpeg.numel()));
    const auto source = pack_file_bytes(folder.path(i));
    const auto src = decoder.info(reinterpret_cast<const uint8_t*>(source.data()), source.size());
    CHECK(info.format == vision::ImageFormat::kJpeg);  // the PNG too: every image re-encoded
    CHECK(std::max(info.width, info.height) == std::min(512, std::max(src.width, src.height)));
  }
  // Decoded and transformed by the Compose given for the field.
  shards::PackedShardsOptions o;
  o.image_fields.emplace("image", vision::Compose({vision::RandomResizedCrop(32),
                                                   vision::RandomHorizontalFlip(),
                                                   vision::ToTensor()}));
  shards::PackedShards decoded(t.file("a"), o);
  REQUIRE(decoded.get(5)["image"].sizes() == at::IntArrayRef({3, 32, 32}));

  // A finished pack is not overwritten unless asked; --copy-images keeps the files' bytes.
  REQUIRE(shard_test::run_pack(t.file("in") + " -o " + t.file("a"), t.file("c.log")) == 2);
  REQUIRE_THAT(pack_file_bytes(t.file("c.log")), Contains("holds a finished pack"));
  REQUIRE(shard_test::run_pack(t.file("in") + " -o " + t.file("a") + " --copy-images --overwrite",
                               t.file("d.log")) == 0);
  shards::PackedShards copied(t.file("a"));
  for (int64_t i : {0, 6, 18}) {
    const at::Tensor bytes = copied.get(i)["image"];
    REQUIRE(std::string(reinterpret_cast<const char*>(bytes.data_ptr<uint8_t>()),
                        static_cast<size_t>(bytes.numel())) == pack_file_bytes(folder.path(i)));
  }
}

TEST_CASE("mploader-pack: a pack killed with SIGKILL resumes and writes every sample once, the same bytes") {
  TempDir t("pack-resume");
  shard_test::write_image_folder(t.file("in"), 4, 10);
  REQUIRE(shard_test::run_pack(t.file("in") + " -o " + t.file("whole") + " --shard-size 16KB",
                               t.file("whole.log")) == 0);
  // One sample per batch and one worker: slow enough to be killed between shards.
  const pid_t pid = shard_test::start_pack(
      {t.file("in"), "-o", t.file("cut"), "--shard-size", "16KB", "--workers", "1", "--batch", "1"},
      t.file("cut.log"));
  const std::string progress = t.file("cut") + "/mploader-pack.progress.json";
  for (int i = 0; i < 3000 && !fs::exists(progress); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    WARN("skipped: the pack finished before it could be killed");
    return;
  }
  REQUIRE(fs::exists(progress));
  REQUIRE_FALSE(fs::exists(t.file("cut") + "/mploader-pack.json"));
  REQUIRE(shard_test::run_pack(t.file("in") + " -o " + t.file("cut") + " --shard-size 16KB",
                               t.file("again.log")) == 0);
  REQUIRE_THAT(pack_file_bytes(t.file("again.log")), Contains("resuming at sample"));
  require_same_pack_files(t.file("whole"), t.file("cut"));
  // Other settings over a stopped pack are refused rather than mixed into it.
  std::ofstream(t.file("whole") + "/mploader-pack.progress.json") << pack_file_bytes(
      t.file("whole") + "/mploader-pack.json");
  fs::remove(t.file("whole") + "/mploader-pack.json");
  REQUIRE(shard_test::run_pack(t.file("in") + " -o " + t.file("whole") + " --quality 50",
                               t.file("other.log")) == 2);
  REQUIRE_THAT(pack_file_bytes(t.file("other.log")), Contains("made with other input or options"));
}

TEST_CASE("mploader-pack: a worker killed mid-pack is replaced and the pack's bytes do not change") {
  TempDir t("pack-worker-kill");
  shard_test::write_image_folder(t.file("in"), 3, 10);
  REQUIRE(shard_test::run_pack(t.file("in") + " -o " + t.file("whole") + " --shard-size 16KB",
                               t.file("whole.log")) == 0);
  ::setenv("MPLOADER_CRASH_DIR", t.file("crashes").c_str(), 1);  // the pack's, inherited
  const pid_t pid = shard_test::start_pack(
      {t.file("in"), "-o", t.file("cut"), "--shard-size", "16KB", "--workers", "2", "--batch", "1"},
      t.file("cut.log"));
  ::unsetenv("MPLOADER_CRASH_DIR");
  // A worker, once batches flow (the first child may be the short-lived process that sizes the
  // slots): a child of any of the pack's threads (the launcher thread forks them).
  for (int i = 0; i < 5000 && pack_file_bytes(t.file("cut.log")).find("packed ") == std::string::npos;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  pid_t worker = 0;
  for (int i = 0; i < 5000 && worker == 0; ++i) {
    for (const auto& task : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
      std::ifstream children(task.path().string() + "/children");
      if (children >> worker) break;
    }
    if (worker == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (worker > 0) ::kill(worker, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  if (worker == 0) {
    WARN("skipped: no worker of the pack was seen to kill");
    return;
  }
  require_same_pack_files(t.file("whole"), t.file("cut"));
  // The death was explained: a crash report, the cause "killed".
  REQUIRE(fs::exists(t.file("crashes")));
  const auto report = fs::directory_iterator(t.file("crashes"))->path().string();
  REQUIRE_THAT(pack_file_bytes(report), Contains("\"killed\""));
}

TEST_CASE("PackedShards: 2 ranks x 2 workers under DistributedSampler get PyTorch's indices and the samples packed there") {
  TempDir t("pack-order");
  shard_test::write_tensor_pack(t.file("p"), 203, 8192);
  auto data = std::make_shared<shards::PackedShards>(t.file("p"));
  REQUIRE(data->size() == 203);
  std::vector<int64_t> seen;
  for (int rank = 0; rank < 2; ++rank) {
    LoaderOptions lo;
    lo.batch_size = 8;
    lo.num_workers = 2;
    lo.sampler = std::make_shared<DistributedSampler>(2, rank, true, 17);
    Loader loader(data, lo);
    loader.set_epoch(3);
    std::vector<int64_t> order;
    for (Batch& b : loader) {
      for (size_t r = 0; r < b.size(); ++r) {
        const int64_t i = b.indices()[r];
        order.push_back(i);
        REQUIRE(b["x"][static_cast<int64_t>(r)][2].item<float>() == -static_cast<float>(i));
        REQUIRE(b["label"][static_cast<int64_t>(r)].item<int64_t>() == i % 7);
        REQUIRE(b["half"][static_cast<int64_t>(r)][1][1].item<float>() == static_cast<float>(i));
        REQUIRE(std::string(b.text("name")[r]) == "sample-" + std::to_string(i));
      }
    }
    REQUIRE(order == DistributedSampler(2, rank, true, 17).indices(203, 3));
    seen.insert(seen.end(), order.begin(), order.end());
  }
  std::sort(seen.begin(), seen.end());
  seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
  REQUIRE(seen.size() == 203);  // every sample (and one repeated as the sampler pads)
}

TEST_CASE("PackedShards: a missing, cut, changed or foreign file is named with the fix") {
  TempDir t("pack-damage");
  shard_test::write_tensor_pack(t.file("p"), 40, 4096);
  REQUIRE_THROWS_WITH(shards::PackedShards(t.file("nothing")),
                      Contains("no pack at"));
  shards::PackedShardsOptions bad;
  bad.image_fields.emplace("x", vision::Compose({vision::Resize(vision::Size2{8, 8})}));
  REQUIRE_THROWS_WITH(shards::PackedShards(t.file("p"), bad),
                      Contains("has no image field \"x\""));

  shards::PackedShards data(t.file("p"));
  const std::string tar = t.file("p") + "/shard-000001.tar";
  const size_t shard = data.shard_of(39);
  REQUIRE(shard >= 1);
  std::string bytes = pack_file_bytes(tar);
  // A byte of a member changed in place: caught by the SHA-256 when asked to check.
  const std::string flipped = [&] {
    std::string b = bytes;
    b[512 + 3] = static_cast<char>(b[512 + 3] ^ 0x55);
    return b;
  }();
  std::ofstream(tar, std::ios::binary | std::ios::trunc) << flipped;
  shards::PackedShardsOptions verify;
  verify.verify_local = true;
  const int64_t first_of_1 = [&] {
    int64_t i = 0;
    while (data.shard_of(i) != 1) ++i;
    return i;
  }();
  REQUIRE_THROWS_WITH(shards::PackedShards(t.file("p"), verify).get(first_of_1),
                      Contains("do not match the SHA-256"));
  // Cut short: the size differs from the pack's.
  std::ofstream(tar, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() - 1024);
  REQUIRE_THROWS_WITH(shards::PackedShards(t.file("p")).get(first_of_1),
                      Contains("cut short or changed"));
  // An index of another pack.
  std::ofstream(tar, std::ios::binary | std::ios::trunc) << bytes;
  fs::copy_file(t.file("p") + "/shard-000000.idx", t.file("p") + "/shard-000001.idx",
                fs::copy_options::overwrite_existing);
  REQUIRE_THROWS_WITH(shards::PackedShards(t.file("p")).get(first_of_1),
                      Contains("belongs to another pack"));
  fs::remove(t.file("p") + "/shard-000001.idx");
  REQUIRE_THROWS_WITH(shards::PackedShards(t.file("p")).get(first_of_1),
                      Contains("cannot open"));
  // A description that is not one.
  std::ofstream(t.file("p") + "/mploader-pack.json") << "{\"format\": \"other\"}";
  REQUIRE_THROWS_WITH(shards::PackedShards(t.file("p")),
                      Contains("has no \"format\": \"mploader-pack\""));
}

TEST_CASE("PackedShards: .npy members round-trip every dtype the writer takes, and refuse bfloat16") {
  namespace sd = shards::detail;
  for (at::ScalarType type : {at::kBool, at::kByte, at::kChar, at::kShort, at::kInt, at::kLong,
                              at::kHalf, at::kFloat, at::kDouble}) {
    for (const at::Tensor& t : {at::ones({2, 3}, type), at::zeros({}, type),
                                at::ones({0, 4}, type), at::ones({5}, type)}) {
      const std::string npy = sd::npy_bytes(t, "f");
      REQUIRE(npy.size() % 64 == (static_cast<size_t>(t.nbytes()) % 64));
      const at::Tensor back = sd::npy_tensor(reinterpret_cast<const uint8_t*>(npy.data()),
                                             npy.size(), "f");
      REQUIRE(back.scalar_type() == type);
      REQUIRE(back.sizes() == t.sizes());
      REQUIRE(at::equal(back, t));
    }
  }
  REQUIRE_THROWS_WITH(sd::npy_bytes(at::ones({2}, at::kBFloat16), "w"),
                      Contains("cannot hold"));
  const std::string cut = sd::npy_bytes(at::ones({4}, at::kFloat), "f").substr(0, 134);
  REQUIRE_THROWS_WITH(sd::npy_tensor(reinterpret_cast<const uint8_t*>(cut.data()), cut.size(), "f"),
                      Contains("needs 16 bytes of data but it holds 6"));
}

TEST_CASE("mploader-pack: a Parquet folder and an HDF5 file that Python wrote pack into the same values") {
  TempDir t("pack-columns");
  const std::string script = t.file("write.py");
  std::ofstream(script) << "import sys\n"
                           "import numpy as np, pyarrow as pa, pyarrow.parquet as pq, h5py\n"
                           "d = sys.argv[1]\n"
                           "for f in range(2):\n"
                           "    r = range(f * 37, f * 37 + 37)\n"
                           "    pq.write_table(pa.table({\n"
                           "        'x': pa.array([[i, -i] for i in r], pa.list_(pa.float32(), 2)),\n"
                           "        'label': pa.array([i % 3 for i in r], pa.int64()),\n"
                           "        'text': pa.array(['row%d' % i for i in r])}),\n"
                           "        d + '/pq/part%d.parquet' % f, row_group_size=10)\n"
                           "with h5py.File(d + '/t.h5', 'w') as h:\n"
                           "    h['images'] = np.arange(50 * 6, dtype=np.int16).reshape(50, 2, 3)\n"
                           "    h['labels'] = np.arange(50, dtype=np.int64) * 7\n";
  fs::create_directories(t.file("pq"));
  const std::string write = std::string(MPLOADER_PYTHON) + " " + script + " " +
                            t.path().string() + " 2>" + t.file("write.err");
  if (std::system(write.c_str()) != 0) {
    WARN("skipped: the project's Python cannot write Parquet and HDF5 (pyarrow, h5py): " +
         pack_file_bytes(t.file("write.err")).substr(0, 300));
    return;
  }
  const int parquet = shard_test::run_pack(t.file("pq") + " -o " + t.file("pqp"), t.file("pq.log"));
  if (parquet == 2 && pack_file_bytes(t.file("pq.log")).find("not one this build reads") !=
                          std::string::npos) {
    WARN("skipped: mploader-pack was built without the parquet component");
    return;
  }
  REQUIRE(parquet == 0);
  shards::PackedShards pq(t.file("pqp"));
  REQUIRE(pq.size() == 74);
  REQUIRE(pq.fields() == std::vector<std::string>{"x:npy", "label:int", "text:text"});
  for (int64_t i : {0, 9, 10, 36, 37, 73}) {
    const Sample s = pq.get(i);
    REQUIRE(at::equal(s["x"], at::tensor({static_cast<float>(i), -static_cast<float>(i)})));
    REQUIRE(s["label"].item<int64_t>() == i % 3);
    REQUIRE(s.text("text") == "row" + std::to_string(i));
  }
  REQUIRE(shard_test::run_pack(t.file("t.h5") + " -o " + t.file("h5p") +
                                   " --fields image=/images,label=/labels --shuffle-seed 4",
                               t.file("h5.log")) == 0);
  shards::PackedShards h5(t.file("h5p"));
  REQUIRE(h5.size() == 50);
  std::vector<int64_t> labels;
  for (int64_t p = 0; p < 50; ++p) {
    const Sample s = h5.get(p);
    const int64_t i = s["label"].item<int64_t>() / 7;
    REQUIRE(at::equal(s["image"], at::arange(i * 6, i * 6 + 6, at::kInt).reshape({2, 3}).to(at::kShort)));
    labels.push_back(i);
  }
  REQUIRE(labels != [] { std::vector<int64_t> v(50); std::iota(v.begin(), v.end(), 0); return v; }());
  std::sort(labels.begin(), labels.end());
  for (int64_t i = 0; i < 50; ++i) REQUIRE(labels[static_cast<size_t>(i)] == i);
  // An HDF5 input without its fields is a usage error that says which flag.
  REQUIRE(shard_test::run_pack(t.file("t.h5") + " -o " + t.file("bad"), t.file("bad.log")) == 2);
  REQUIRE_THAT(pack_file_bytes(t.file("bad.log")), Contains("needs --fields"));
}

TEST_CASE("PackedShards: a spawned worker's recipe rebuilds the same dataset, options included") {
  TempDir t("pack-recipe");
  shard_test::write_image_folder(t.file("in"), 2, 4);
  REQUIRE(shard_test::run_pack(t.file("in") + " -o " + t.file("p") + " --shard-size 32KB",
                               t.file("p.log")) == 0);
  shards::PackedShardsOptions o;
  o.image_fields.emplace("image", vision::Compose({vision::RandomResizedCrop(40),
                                                   vision::RandomHorizontalFlip()}));
  o.verify_local = true;
  o.max_held_shards = 3;
  shards::PackedShards data(t.file("p"), o);
  const std::optional<DatasetRecipe> recipe = data.recipe();
  REQUIRE(recipe);
  REQUIRE(recipe->factory == "mploader.shards.PackedShards");
  const auto again = shards::PackedShards::from_recipe(recipe->config);
  REQUIRE(again->size() == data.size());
  REQUIRE(again->shard_sizes() == data.shard_sizes());
  REQUIRE(again->options().verify_local);
  REQUIRE(again->options().max_held_shards == 3);
  for (int64_t i = 0; i < static_cast<int64_t>(data.size()); ++i) {
    REQUIRE(at::equal(again->get(i)["image"], data.get(i)["image"]));  // the same crop and flip
    REQUIRE(again->get(i)["label"].item<int64_t>() == data.get(i)["label"].item<int64_t>());
  }
}
