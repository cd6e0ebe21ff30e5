// TokenStream: (input, target) windows cut from token files, through a Loader with workers,
// and every way its files can be wrong.
#include <mploader/errors.h>
#include <mploader/loader.h>
#include <mploader/token_stream.h>

#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

namespace test_token_stream {

using namespace mploader;
namespace fs = std::filesystem;

namespace {

// A scratch folder removed with the test.
struct ScratchDir {
  fs::path path = fs::temp_directory_path() /
                  ("mploader-tokens-" + std::to_string(getpid()) + "-" + std::to_string(++count));
  ScratchDir() { fs::create_directories(path); }
  ~ScratchDir() { fs::remove_all(path); }
  static inline int count = 0;
};

// A file whose token at position i is (i + first) % modulus, so a window names its own start.
template <typename Id>
std::string write_tokens(const fs::path& path, int64_t n, int64_t first = 0,
                         int64_t modulus = 60000) {
  std::ofstream out(path, std::ios::binary);
  for (int64_t i = 0; i < n; ++i) {
    const Id id = static_cast<Id>((i + first) % modulus);
    out.write(reinterpret_cast<const char*>(&id), sizeof id);
  }
  return path.string();
}

LoaderOptions token_options(int64_t workers, int64_t batch = 8) {
  LoaderOptions o;
  o.batch_size = batch;
  o.num_workers = workers;
  o.world_size = 1;
  o.seed = 5;
  o.timeout = std::chrono::seconds(60);
  return o;
}

// Each window's first input token (its start, for files from write_tokens), checked against
// the target (the input shifted by one).
std::vector<int64_t> starts_of(const Batch& b, int64_t context) {
  std::vector<int64_t> starts;
  const at::Tensor input = b["input"], target = b["target"];
  REQUIRE(input.sizes() == at::IntArrayRef{static_cast<int64_t>(b.size()), context});
  CHECK(input.narrow(1, 1, context - 1).equal(target.narrow(1, 0, context - 1)));
  for (int64_t r = 0; r < input.size(0); ++r) {
    const int64_t start = input[r][0].item<int64_t>();
    CHECK(target[r][context - 1].item<int64_t>() == start + context);
    starts.push_back(start);
  }
  return starts;
}

}  // namespace

TEST_CASE("token stream: sequential windows cover the file once, with an offset per epoch",
          "[stream][tokens]") {
  ScratchDir dir;
  const std::string file = write_tokens<uint16_t>(dir.path / "train.bin", 10000);
  TokenStreamOptions to;
  to.context = 32;
  to.windows_per_shard = 20;
  auto data = std::make_shared<TokenStream>(std::vector<std::string>{file}, to);
  CHECK(data->size() == 311);  // (10000 - 32) / 32
  CHECK(data->shards().size() == 16);
  LoaderOptions o = token_options(2);
  o.shuffle = true;
  Loader loader(data, o);
  std::set<int64_t> offsets;
  for (uint64_t epoch = 0; epoch < 4; ++epoch) {
    loader.set_epoch(epoch);
    std::set<int64_t> starts;
    for (Batch& b : loader) {
      const std::vector<int64_t> s = starts_of(b, 32);
      for (size_t r = 0; r < s.size(); ++r) {
        CHECK(starts.insert(s[r]).second);
        CHECK(s[r] == data->window_start(b.indices()[r], 5, epoch));
      }
    }
    CHECK(starts.size() == 311);
    offsets.insert(*starts.begin());
    for (int64_t s : starts) CHECK(s % 32 == *starts.begin());  // back to back
  }
  CHECK(offsets.size() > 1);  // the boundaries moved
}

TEST_CASE("token stream: random windows are drawn per sample and the same every run",
          "[stream][tokens]") {
  ScratchDir dir;
  const std::string file = write_tokens<uint32_t>(dir.path / "t.bin", 3000, 7, 1 << 30);
  TokenStreamOptions to;
  to.type = TokenType::kUInt32;
  to.context = 64;
  to.windows = TokenWindows::kRandom;
  auto data = std::make_shared<TokenStream>(std::vector<std::string>{file}, to);
  auto run = [&](uint64_t epoch) {
    Loader loader(data, token_options(1));
    loader.set_epoch(epoch);
    std::vector<int64_t> all;
    for (Batch& b : loader) {
      for (int64_t s : starts_of(b, 64)) all.push_back(s - 7);
    }
    return all;
  };
  const std::vector<int64_t> first = run(3);
  CHECK(first.size() == data->size());
  for (int64_t s : first) CHECK((s >= 0 && s + 64 < 3000));
  CHECK(run(3) == first);
  CHECK(run(4) != first);
}

TEST_CASE("token stream: two ranks of several workers read disjoint windows of several files",
          "[stream][tokens]") {
  ScratchDir dir;
  std::vector<std::string> files;
  for (int f = 0; f < 3; ++f) {
    files.push_back(write_tokens<uint16_t>(dir.path / ("part" + std::to_string(f) + ".bin"),
                                           2000 + 500 * f, 10000 * f));
  }
  TokenStreamOptions to;
  to.context = 16;
  to.windows_per_shard = 10;
  std::set<int64_t> seen;
  std::vector<size_t> steps;
  for (int64_t rank = 0; rank < 2; ++rank) {
    LoaderOptions o = token_options(3, 4);
    o.world_size = 2;
    o.rank = rank;
    o.shuffle = true;
    o.shuffle_buffer = 16;
    o.uneven_ranks = UnevenRanks::kDrop;  // no window twice: checked below
    auto data = std::make_shared<TokenStream>(files, to);
    Loader loader(data, o);
    size_t n = 0;
    for (Batch& b : loader) {
      for (int64_t s : starts_of(b, 16)) CHECK(seen.insert(s).second);
      ++n;
    }
    steps.push_back(n);
  }
  CHECK(steps[0] == steps[1]);
  // (2000 - 16) / 16 + (2500 - 16) / 16 + (3000 - 16) / 16 windows, less those dropped to even
  // out the ranks: at most one batch of 4 per worker.
  CHECK(seen.size() <= 124 + 155 + 186);
  CHECK(seen.size() >= 124 + 155 + 186 - 3 * 4);
}

TEST_CASE("token stream: spawned workers rebuild it from its recipe", "[stream][tokens][spawn]") {
  ScratchDir dir;
  const std::string file = write_tokens<uint16_t>(dir.path / "s.bin", 1000);
  TokenStreamOptions to;
  to.context = 10;
  LoaderOptions o = token_options(2);
  o.start_method = StartMethod::kSpawn;
  Loader loader(std::make_shared<TokenStream>(std::vector<std::string>{file}, to), o);
  std::set<int64_t> starts;
  for (Batch& b : loader) {
    for (int64_t s : starts_of(b, 10)) starts.insert(s);
  }
  CHECK(starts.size() == 99);
}

TEST_CASE("token stream: bad files are refused with the file named and the fix",
          "[stream][tokens]") {
  ScratchDir dir;
  TokenStreamOptions to;
  to.context = 8;
  const fs::path odd = dir.path / "odd.bin";
  write_tokens<uint16_t>(odd, 100);
  fs::resize_file(odd, 199);
  CHECK_THROWS_WITH(TokenStream({odd.string()}, to),
                    Catch::Contains("odd.bin' is 199 bytes, not a multiple of 2") &&
                        Catch::Contains("cut short"));
  CHECK_THROWS_WITH(TokenStream({(dir.path / "missing.bin").string()}, to),
                    Catch::Contains("missing.bin") && Catch::Contains("No such file"));
  const std::string tiny = write_tokens<uint16_t>(dir.path / "tiny.bin", 8);
  CHECK_THROWS_WITH(TokenStream({tiny}, to),
                    Catch::Contains("holds 8 tokens") && Catch::Contains("needs 9"));
  CHECK_THROWS_WITH(TokenStream({}, to), Catch::Contains("no token files"));
  // This program links the core alone: a URL says which library reads it.
  CHECK_THROWS_WITH(TokenStream({"https://example.com/train.bin"}, to),
                    Catch::Contains("https://example.com/train.bin") &&
                        Catch::Contains("target_link_libraries(<your target> PRIVATE "
                                        "mploader::remote)"));
}

TEST_CASE("token stream: an id outside the vocabulary fails its batch, naming file and token",
          "[stream][tokens]") {
  ScratchDir dir;
  const std::string file = write_tokens<uint16_t>(dir.path / "v.bin", 500, 0, 300);
  TokenStreamOptions to;
  to.context = 16;
  to.vocab_size = 256;
  Loader loader(std::make_shared<TokenStream>(std::vector<std::string>{file}, to),
                token_options(1));
  CHECK_THROWS_AS(
      [&] {
        for (Batch& b : loader) (void)b;
      }(),
      WorkerError);
  try {
    Loader again(std::make_shared<TokenStream>(std::vector<std::string>{file}, to),
                 token_options(0));
    for (Batch& b : again) (void)b;
    FAIL("no error");
  } catch (const std::exception& e) {
    CHECK_THAT(e.what(), Catch::Contains("v.bin' is 256, outside the vocabulary of 256"));
  }
}

TEST_CASE("token stream: a file that disappears or changes under the loader is named",
          "[stream][tokens]") {
  ScratchDir dir;
  TokenStreamOptions to;
  to.context = 8;
  const std::string gone = write_tokens<uint16_t>(dir.path / "gone.bin", 400);
  auto data = std::make_shared<TokenStream>(std::vector<std::string>{gone}, to);
  fs::remove(gone);
  Loader loader(data, token_options(0));
  CHECK_THROWS_WITH(loader.next(), Catch::Contains("cannot open token file") &&
                                       Catch::Contains("gone.bin"));
  const std::string shrunk = write_tokens<uint16_t>(dir.path / "shrunk.bin", 400);
  auto data2 = std::make_shared<TokenStream>(std::vector<std::string>{shrunk}, to);
  fs::resize_file(shrunk, 300);
  Loader loader2(data2, token_options(0));
  CHECK_THROWS_WITH(loader2.next(), Catch::Contains("shrunk.bin' is now 300 bytes, 800 when"));
}

}  // namespace test_token_stream
