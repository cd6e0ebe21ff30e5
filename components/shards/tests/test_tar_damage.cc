// Tars that lie or change under the reader: a member's size in its header that does not match
// its data, a tar cut on a member boundary, one rewritten in place while it is read, one file
// under two spellings, an empty corpus, and member text with NUL bytes in a message.
#include <catch2/catch.hpp>

#include "components/shards/tests/shard_test_support.h"
#include "shards/tar_reader.h"

#include <mploader/errors.h>
#include <mploader/shards/tar_shards.h>

#include <ATen/ATen.h>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>

namespace test_tar_damage {

using namespace shard_test;
using mploader::shards::TarShards;
using mploader::shards::TarShardsOptions;
using Catch::Matchers::Contains;
namespace tar = mploader::shards::detail;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// The offset of the ustar header of the member named `name` (names start a 512-byte block).
size_t header_of(const std::string& tar, const std::string& name) {
  for (size_t at = 0; at + 512 <= tar.size(); at += 512) {
    if (tar.compare(at, name.size() + 1, name + std::string(1, '\0')) == 0) return at;
  }
  FAIL("no header of " << name);
  return 0;
}

// Rewrites the size field of member `name`'s header to `size`, and its checksum to match.
void set_member_size(const std::string& path, const std::string& name, int64_t size) {
  std::string tar = read_file(path);
  const size_t h = header_of(tar, name);
  char field[13];
  std::snprintf(field, sizeof field, "%011llo", static_cast<unsigned long long>(size));
  tar.replace(h + 124, 12, std::string(field, 12));  // 11 octal digits and a NUL
  tar.replace(h + 148, 8, std::string(8, ' '));
  unsigned sum = 0;
  for (size_t i = 0; i < 512; ++i) sum += static_cast<unsigned char>(tar[h + i]);
  char checksum[8];
  std::snprintf(checksum, sizeof checksum, "%06o", sum);
  tar.replace(h + 148, 8, std::string(checksum, 7) + " ");
  write_file(path, tar);
}

// Six samples of a 100-byte "txt" and a 3,000-byte "bin" member.
std::string six_samples(const TempDir& dir) {
  std::vector<Entry> entries;
  for (int k = 0; k < 6; ++k) {
    entries.push_back({"s" + std::to_string(k) + ".txt", std::string(100, 'a' + k)});
    entries.push_back({"s" + std::to_string(k) + ".bin", std::string(3000, 'x')});
  }
  const std::string path = dir.file("six.tar");
  write_tar(path, entries);
  return path;
}

// Reads every sample's data through a TarReader; returns how many there were.
int64_t read_all(const std::string& path) {
  tar::TarReader reader(path);
  tar::RawSample sample;
  while (reader.next(&sample)) {
  }
  return reader.position();
}

}  // namespace

TEST_CASE("shards: a member's header saying fewer bytes than it holds is a damaged tar") {
  TempDir dir("lie-less");
  const std::string path = six_samples(dir);
  REQUIRE(TarShards({path}).size() == 6);
  set_member_size(path, "s2.bin", 100);
  // libarchive finds no header after the 100 bytes; retrying skipped to the next one.
  REQUIRE_THROWS_AS(TarShards({path}), mploader::OptionError);
  REQUIRE_THROWS_WITH(TarShards({path}), Contains(path) && Contains("damaged") &&
                                             Contains("after 3 samples") &&
                                             Contains("write it again"));
  REQUIRE_THROWS_WITH(read_all(path), Contains(path) && Contains("Damaged tar archive"));
}

TEST_CASE("shards: a member's header saying more bytes than it holds is a damaged tar") {
  TempDir dir("lie-more");
  const std::string path = six_samples(dir);
  set_member_size(path, "s1.txt", 3000);  // swallows s1.bin's header, ends inside its data
  REQUIRE_THROWS_WITH(TarShards({path}), Contains(path) && Contains("damaged"));
  REQUIRE_THROWS_WITH(read_all(path), Contains(path) && Contains("damaged"));
}

TEST_CASE("shards: member text in a message keeps what follows a NUL byte") {
  TempDir dir("nul");
  write_tar(dir.file("n.tar"), {{"a.cls", std::string("12\0\0ab", 6)}});
  TarShardsOptions o;
  o.int_keys = {"cls"};
  TarShards data({dir.file("n.tar")}, o);
  REQUIRE_THROWS_WITH(data.get(0), Contains("\"12\\x00\\x00ab\" (6 bytes)") &&
                                       Contains("on_bad_sample = kSkip"));
}

TEST_CASE("shards: a tar cut on a member boundary is refused, naming the samples there") {
  TempDir dir("boundary");
  const auto paths = write_corpus(dir, {6});
  const std::string tar = read_file(paths[0]);
  const size_t cut = header_of(tar, "part0/100004.idx");  // samples 0 to 3 are whole
  TarShards before(paths);
  fs::resize_file(paths[0], cut);
  REQUIRE_THROWS_AS(TarShards(paths), mploader::OptionError);
  REQUIRE_THROWS_WITH(TarShards(paths), Contains(paths[0]) && Contains("cut short") &&
                                            Contains("after 4 samples") &&
                                            Contains("byte " + std::to_string(cut)));
  // Cut after the scan: the read names the tar and the count the scan found.
  REQUIRE_THROWS_WITH(before.get(5), Contains(paths[0]) && Contains("6 samples") &&
                                         Contains("it changed since the Loader counted it"));
}

TEST_CASE("shards: a tar rewritten in place while it is read is an error, not mixed data") {
  TempDir dir("inplace");
  const auto paths = write_corpus(dir, {40});
  // An old modification time, so that the rewrite's is another even on a coarse clock.
  fs::last_write_time(paths[0], fs::last_write_time(paths[0]) - std::chrono::hours(1));
  TarShards data(paths);
  for (int64_t g = 0; g < 12; ++g) CHECK(bytes_of(data.get(g)["txt"]) == txt_of(g));
  // Same size and layout, new values: every later "txt" member's bytes changed.
  std::string tar = read_file(paths[0]);
  for (int64_t g = 12; g < 40; ++g) {
    const size_t at = tar.find(txt_of(g));
    REQUIRE(at != std::string::npos);
    for (size_t i = 0; i < txt_of(g).size(); ++i) tar[at + i] = static_cast<char>(~tar[at + i]);
  }
  const int fd = ::open(paths[0].c_str(), O_WRONLY);
  REQUIRE(fd >= 0);
  REQUIRE(::pwrite(fd, tar.data(), tar.size(), 0) == static_cast<ssize_t>(tar.size()));
  ::close(fd);
  REQUIRE(fs::file_size(paths[0]) == tar.size());
  REQUIRE_THROWS_WITH(data.get(12), Contains(paths[0]) && Contains("sample 12") &&
                                        Contains("it changed since the Loader counted it"));
  REQUIRE_THROWS_WITH(data.get(30), Contains("it changed since the Loader counted it"));
}

TEST_CASE("shards: one tar under two spellings is refused, naming both") {
  TempDir dir("spellings");
  const auto paths = write_corpus(dir, {3});
  const std::string other = (dir.path() / "." / "shard-0.tar").string();
  REQUIRE_THROWS_AS(TarShards({paths[0], other}), mploader::OptionError);
  REQUIRE_THROWS_WITH(TarShards({paths[0], other}),
                      Contains(paths[0]) && Contains(other) && Contains("same file"));
}

TEST_CASE("shards: a corpus of no sample is refused at construction, naming its files") {
  TempDir dir("nosample");
  write_tar(dir.file("none.tar"), {});
  write_tar(dir.file("folders.tar"), {{"a", "", true}, {"a/README", "no extension"}});
  REQUIRE_THROWS_AS(TarShards({dir.file("none.tar"), dir.file("folders.tar")}),
                    mploader::OptionError);
  REQUIRE_THROWS_WITH(TarShards({dir.file("none.tar"), dir.file("folders.tar")}),
                      Contains("corpus is empty") && Contains(dir.file("none.tar")) &&
                          Contains(dir.file("folders.tar")));
}

}  // namespace test_tar_damage
