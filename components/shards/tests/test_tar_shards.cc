// TarShards on its own: grouping members into samples, counting, reading in order and at
// random through the read-ahead cache, the options, and the errors of broken, changed and
// vanished tars.
#include <catch2/catch.hpp>

#include "components/shards/tests/shard_test_support.h"
#include "shards/sample_source.h"
#include "tests/error_text.h"

#include <mploader/errors.h>
#include <mploader/shards/tar_shards.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <numeric>
#include <random>

namespace test_tar_shards {

using namespace shard_test;
using mploader::shards::OnBadSample;
using mploader::shards::TarShards;
using mploader::shards::TarShardsOptions;
using Catch::Matchers::Contains;

namespace {

// Checks that `s` is global sample `g` of write_corpus(), every member as bytes.
void check_raw(const mploader::Sample& s, int64_t g) {
  REQUIRE((s.names() == std::vector<std::string>{"idx", "seg.bin", "txt"}));
  CHECK(s["idx"].scalar_type() == at::kByte);
  CHECK(bytes_of(s["idx"]) == std::to_string(g) + "\n");
  CHECK(bytes_of(s["txt"]) == txt_of(g));
  CHECK(bytes_of(s["seg.bin"]) == seg_of(g));
}

void cut_file(const std::string& path, uintmax_t bytes) { fs::resize_file(path, bytes); }

// The offset halfway through the first occurrence of `data` in the file at `path`.
uintmax_t middle_of(const std::string& path, const std::string& data) {
  std::ifstream in(path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = text.find(data);
  REQUIRE(at != std::string::npos);
  return at + data.size() / 2;
}

}  // namespace

TEST_CASE("shards: members with one key form a sample, and every shard is counted") {
  TempDir dir("count");
  const auto paths = write_corpus(dir, {5, 0, 7, 1});
  TarShards data(paths);
  REQUIRE(data.shards().size() == 4);
  CHECK(data.shards()[0].num_samples == 5);
  CHECK(data.shards()[1].num_samples == 0);
  CHECK(data.shards()[2].num_samples == 7);
  CHECK(data.shards()[3].num_samples == 1);
  CHECK(data.shards()[2].name == paths[2]);
  CHECK(data.size() == 13);
  CHECK(data.scans()[2].file_bytes == static_cast<int64_t>(fs::file_size(paths[2])));
  check_raw(data.get(0), 0);
  check_raw(data.get(12), 12);
  write_tar(dir.file("none.tar"), {});
  std::ofstream(dir.file("zero.tar")).close();
  CHECK(TarShards({dir.file("none.tar"), paths[0]}).shards()[0].num_samples == 0);
  REQUIRE_THROWS_WITH(TarShards({dir.file("zero.tar"), paths[0]}),
                      Contains(dir.file("zero.tar")) && Contains("is empty (0 bytes)"));
}

TEST_CASE("shards: the key is the path up to the first dot of the base name") {
  TempDir dir("keys");
  write_tar(dir.file("a.tar"), {{"a.b/x.seg.png", "1"},
                                {"a.b/x.jpg", "2"},
                                {"a.b/y.jpg", "3"},
                                {"c/x.jpg", "4"},
                                {"c/.hidden", "ignored"},
                                {"c/noext", "ignored"},
                                {"c/x", "", true}});
  TarShards data({dir.file("a.tar")});
  REQUIRE(data.size() == 3);
  mploader::Sample first = data.get(0);
  CHECK((first.names() == std::vector<std::string>{"jpg", "seg.png"}));
  CHECK(bytes_of(first["seg.png"]) == "1");
  CHECK(bytes_of(data.get(1)["jpg"]) == "3");
  CHECK(bytes_of(data.get(2)["jpg"]) == "4");
}

TEST_CASE("shards: every sample reads back in order and at random, with any read-ahead") {
  TempDir dir("order");
  const auto paths = write_corpus(dir, {40, 3, 25});
  for (int64_t read_ahead : {int64_t{0}, int64_t{4}, int64_t{1024}}) {
    CAPTURE(read_ahead);
    TarShardsOptions o;
    o.read_ahead = read_ahead;
    TarShards data(paths, o);
    for (int64_t g = 0; g < 68; ++g) check_raw(data.get(g), g);
    std::vector<int64_t> order(68);
    std::iota(order.begin(), order.end(), 0);
    std::mt19937 rng(static_cast<uint32_t>(read_ahead) + 1);
    std::shuffle(order.begin(), order.end(), rng);
    for (int64_t g : order) check_raw(data.get(g), g);
    // A shuffle buffer's order: increasing within a window, a shard boundary straddled.
    std::vector<int64_t> windowed(68);
    std::iota(windowed.begin(), windowed.end(), 0);
    for (size_t i = 0; i + 8 <= windowed.size(); i += 8) {
      std::shuffle(windowed.begin() + i, windowed.begin() + i + 8, rng);
    }
    for (int64_t g : windowed) check_raw(data.get(g), g);
  }
}

TEST_CASE("shards: keys select and order members, int_keys become int64 scalars") {
  TempDir dir("intkeys");
  TarShardsOptions o;
  o.keys = {"txt", "idx"};
  o.int_keys = {"idx"};
  TarShards data(write_corpus(dir, {6, 6}), o);
  for (int64_t g = 0; g < 12; ++g) {
    mploader::Sample s = data.get(g);
    REQUIRE((s.names() == std::vector<std::string>{"txt", "idx"}));
    CHECK(s["idx"].dim() == 0);
    CHECK(s["idx"].scalar_type() == at::kLong);
    CHECK(s["idx"].item<int64_t>() == g);
    CHECK(bytes_of(s["txt"]) == txt_of(g));
  }
}

TEST_CASE("shards: a sample without a listed key is an error naming the tar and the key") {
  TempDir dir("missing");
  const auto paths = write_corpus(dir, {4});
  TarShardsOptions o;
  o.keys = {"txt", "cls"};
  TarShards data(paths, o);
  REQUIRE_THROWS_WITH(data.get(2), Contains(paths[0]) && Contains("\"cls\"") &&
                                       Contains("sample 2") && Contains("kSkip"));
}

TEST_CASE("shards: with kSkip a bad sample is replaced by the next good one of its shard") {
  TempDir dir("skip");
  write_tar(dir.file("s.tar"), {{"a.txt", "A"}, {"a.cls", "1"},
                                {"b.txt", "B"}, {"b.cls", "two"},
                                {"c.txt", "C"},
                                {"d.txt", "D"}, {"d.cls", "4"}});
  TarShardsOptions o;
  o.keys = {"txt", "cls"};
  o.int_keys = {"cls"};
  o.on_bad_sample = OnBadSample::kSkip;
  TarShards data({dir.file("s.tar")}, o);
  CHECK(bytes_of(data.get(0)["txt"]) == "A");
  CHECK(bytes_of(data.get(1)["txt"]) == "D");  // b's cls is no integer, c has none
  CHECK(bytes_of(data.get(2)["txt"]) == "D");
  CHECK(data.get(3)["cls"].item<int64_t>() == 4);
  o.max_consecutive_bad = 1;
  TarShards strict({dir.file("s.tar")}, o);
  REQUIRE_THROWS_WITH(strict.get(1), Contains("\"two\"") && Contains("max_consecutive_bad"));
  o.on_bad_sample = OnBadSample::kRaise;
  TarShards raising({dir.file("s.tar")}, o);
  REQUIRE_THROWS_WITH(raising.get(1), Contains("b.cls") && Contains("integer"));
}

TEST_CASE("shards: a tar cut inside a member's data is refused at construction") {
  TempDir dir("cut");
  const auto paths = write_corpus(dir, {10});
  TarShards before(paths);
  cut_file(paths[0], middle_of(paths[0], txt_of(5)));
  REQUIRE_THROWS_AS(TarShards(paths), mploader::OptionError);
  REQUIRE_THROWS_WITH(TarShards(paths), Contains(paths[0]) && Contains("cut short") &&
                                            Contains("100005.txt") && Contains("write it again"));
  // Cut after the scan: the read names the tar and says it changed.
  REQUIRE_THROWS_WITH(before.get(7), Contains(paths[0]) && Contains("sample 7") &&
                                         Contains("it changed since the Loader counted it"));
}

TEST_CASE("shards: a missing file, a file that is no tar and an empty list are refused") {
  TempDir dir("notar");
  std::ofstream(dir.file("text.tar")) << std::string(4096, 'x');
  REQUIRE_THROWS_WITH(TarShards({dir.file("text.tar")}),
                      Contains(dir.file("text.tar")) && Contains("cannot be read as a tar") &&
                          Contains("Unrecognized archive format"));
  REQUIRE_THROWS_WITH(TarShards({dir.file("absent.tar")}),
                      Contains(dir.file("absent.tar")) && Contains("No such file"));
  REQUIRE_THROWS_AS(TarShards(std::vector<std::string>{}), mploader::OptionError);
  TarShardsOptions o;
  o.int_keys = {"cls"};
  o.image_keys.emplace("cls", mploader::vision::Compose({mploader::vision::CenterCrop(2)}));
  write_tar(dir.file("ok.tar"), {{"a.cls", "1"}});
  REQUIRE_THROWS_WITH(TarShards({dir.file("ok.tar")}, o), Contains("int_keys and image_keys"));
}

TEST_CASE("shards: two members of one extension in a sample are refused at construction") {
  TempDir dir("dup");
  write_tar(dir.file("d.tar"), {{"a.txt", "1"}, {"a.txt", "2"}});
  REQUIRE_THROWS_WITH(TarShards({dir.file("d.tar")}),
                      Contains(dir.file("d.tar")) && Contains("two members"));
}

TEST_CASE("shards: a tar deleted after construction is an error naming it") {
  TempDir dir("deleted");
  const auto paths = write_corpus(dir, {3, 3});
  TarShards data(paths);
  check_raw(data.get(0), 0);
  fs::remove(paths[1]);
  REQUIRE_THROWS_WITH(data.get(4), Contains(paths[1]) && Contains("deleted") &&
                                       Contains("sample 4"));
  check_raw(data.get(1), 1);  // the other shard reads on
}

TEST_CASE("shards: a tar rewritten after construction is an error saying it changed") {
  TempDir dir("changed");
  const auto paths = write_corpus(dir, {5});
  TarShards data(paths);
  write_tar(paths[0], shard_entries(0, 3, "part0"));
  REQUIRE_THROWS_WITH(data.get(1), Contains(paths[0]) &&
                                       Contains("it changed since the Loader counted it"));
}

TEST_CASE("shards: from_directory takes every .tar of a folder in sorted order") {
  TempDir dir("folder");
  write_tar(dir.file("b.tar"), shard_entries(0, 2, "b"));
  write_tar(dir.file("a.tar"), shard_entries(0, 3, "a"));
  std::ofstream(dir.file("notes.txt")) << "not a shard";
  auto data = TarShards::from_directory(dir.path().string());
  REQUIRE((data->paths() == std::vector<std::string>{dir.file("a.tar"), dir.file("b.tar")}));
  CHECK(data->size() == 5);
  TempDir empty("empty");
  REQUIRE_THROWS_WITH(TarShards::from_directory(empty.path().string()), Contains("no file"));
}

TEST_CASE("shards: the recipe rebuilds the dataset without a second scan") {
  TempDir dir("recipe");
  const auto paths = write_corpus(dir, {4, 2});
  TarShardsOptions o;
  o.keys = {"idx"};
  o.int_keys = {"idx"};
  TarShards data(paths, o);
  const auto recipe = data.recipe();
  REQUIRE(recipe);
  auto again = TarShards::from_recipe(recipe->config);
  CHECK(again->size() == 6);
  CHECK(again->options().keys == o.keys);
  CHECK(again->get(5)["idx"].item<int64_t>() == 5);
}

TEST_CASE("shards: a shuffle buffer's order within the read-ahead opens each tar once") {
  TempDir dir("once");
  const std::vector<int64_t> sizes{40, 3, 25};
  const auto paths = write_corpus(dir, sizes);
  std::vector<mploader::shards::ShardScan> scans;
  for (const std::string& p : paths) scans.push_back(mploader::shards::detail::scan_shard(p));
  std::vector<std::pair<size_t, int64_t>> order;  // shard, sample, windows of 8 shuffled
  for (size_t shard = 0; shard < sizes.size(); ++shard) {
    for (int64_t k = 0; k < sizes[shard]; ++k) order.emplace_back(shard, k);
  }
  std::mt19937 rng(3);
  for (size_t i = 0; i < order.size(); i += 8) {
    std::shuffle(order.begin() + i, order.begin() + std::min(order.size(), i + 8), rng);
  }
  const mploader::remote::RemoteOptions local_only;
  auto read_all = [&](int64_t read_ahead, int64_t read_ahead_bytes) {
    mploader::shards::detail::SampleSource source(paths, scans, read_ahead, read_ahead_bytes,
                                                  local_only);
    int64_t first = 0;
    for (const auto& [shard, k] : order) {
      first = 0;
      for (size_t s = 0; s < shard; ++s) first += sizes[s];
      const auto raw = source.fetch(shard, k, false);
      REQUIRE(raw->members.size() == 3);
      REQUIRE(raw->members[1].ext == "txt");
      REQUIRE(std::string(raw->members[1].bytes.begin(), raw->members[1].bytes.end()) ==
              txt_of(first + k));
    }
    CHECK(source.cached() == 0);  // each kept sample was taken once
    return source.opens();
  };
  CHECK(read_all(8, int64_t{1} << 30) == 3);
  CHECK(read_all(1024, int64_t{1} << 30) == 3);
  CHECK(read_all(0, int64_t{1} << 30) > 3);  // nothing kept: passed samples reopen the tar
  CHECK(read_all(8, 200) > 3);               // a byte bound that holds about one sample
}

TEST_CASE("shards: a gzipped tar reads the same, and one cut short is refused by name") {
  TempDir dir("gzip");
  const std::string path = dir.file("z.tar.gz");
  write_tar(path, shard_entries(0, 30, "z"), /*gzip=*/true);
  TarShards data({path});
  REQUIRE(data.size() == 30);
  std::vector<int64_t> order(30);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(9));
  for (int64_t g : order) check_raw(data.get(g), g);
  cut_file(path, fs::file_size(path) / 2);
  REQUIRE_THROWS_WITH(TarShards({path}), Contains(path) && Contains("write it again"));
}

// The component's errors are mploader::Errors: the file-list check it shares with
// ParquetShards (core/file_list.h), a tar that cannot be read, and a bad sample alike.
TEST_CASE("shards: the file list, an unreadable tar and a bad sample are all mploader::Errors") {
  using testing_errors::mploader_error_of;
  TempDir dir("family");
  const auto paths = write_corpus(dir, {3});
  CHECK_THAT(mploader_error_of([] { TarShards(std::vector<std::string>{}); }),
             Catch::StartsWith("mploader: TarShards: the list of files is empty. Give at least "
                               "one file, or use TarShards::from_directory"));
  CHECK_THAT(mploader_error_of([&] { TarShards({paths[0], paths[0]}); }),
             Catch::StartsWith("mploader: TarShards: ") &&
                 Contains(paths[0] + "\" is listed twice"));
  const std::string linked = dir.file("linked.tar");
  std::filesystem::create_hard_link(paths[0], linked);
  CHECK_THAT(mploader_error_of([&] { TarShards({paths[0], linked}); }),
             Contains(paths[0]) && Contains(linked) && Contains("(device ") &&
                 Contains("List each file once"));
  std::ofstream(dir.file("text.tar")) << "not a tar";
  CHECK_THAT(mploader_error_of([&] { TarShards({dir.file("text.tar")}); }),
             Catch::StartsWith("mploader: TarShards: ") && Contains("cannot be read as a tar"));
  write_tar(dir.file("bad.tar"), {{"a.cls", "one"}});
  TarShardsOptions o;
  o.int_keys = {"cls"};
  o.on_bad_sample = OnBadSample::kRaise;
  TarShards bad({dir.file("bad.tar")}, o);
  CHECK_THAT(mploader_error_of([&] { (void)bad.get(0); }),
             Catch::StartsWith("mploader: TarShards: ") && Contains("a.cls"));
}

}  // namespace test_tar_shards
