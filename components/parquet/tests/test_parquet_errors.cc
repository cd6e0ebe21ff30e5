// ParquetShards' bad inputs: each is an error naming the file, the column or the option, and
// the fix; never a crash, and never wrong values.
#include <catch2/catch.hpp>

#include "components/parquet/tests/pq_files.h"
#include "tests/error_text.h"

#include <mploader/errors.h>
#include <mploader/loader.h>
#include <mploader/parquet/parquet_shards.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <fstream>

namespace test_parquet_errors {

using mploader::Loader;
using mploader::LoaderOptions;
using mploader::OptionError;
using mploader::parquet::NullPolicy;
using mploader::parquet::ParquetShards;
using mploader::parquet::ParquetShardsOptions;

namespace {

std::string construction_error(const std::vector<std::string>& paths,
                               const ParquetShardsOptions& o = {}) {
  try {
    ParquetShards data(paths, o);
  } catch (const OptionError& e) {
    return e.what();
  }
  FAIL("the dataset was built");
  return {};
}

std::string copy_of(const std::string& name, const std::string& as) {
  const std::string to = pq_test::path(as);
  std::filesystem::copy_file(pq_test::path(name), to,
                             std::filesystem::copy_options::overwrite_existing);
  return to;
}

// Flips one byte of the value of row `row` (of `width` bytes) of a column's data page, whose
// values start at `values_at`: the page's checksum no longer matches.
void flip_value_byte(const std::string& file, int64_t values_at, int64_t row, int64_t width) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  const auto at = static_cast<std::streamoff>(values_at + row * width + width - 2);
  f.seekg(at);
  char byte = 0;
  f.read(&byte, 1);
  byte = static_cast<char>(byte ^ 0x5a);
  f.seekp(at);
  f.write(&byte, 1);
}

}  // namespace

TEST_CASE("parquet: a missing column names the file and lists its columns", "[parquet]") {
  PQ_TEST_NEEDS_FILES();
  ParquetShardsOptions o;
  o.columns = {"i32", "nope"};
  const std::string what = construction_error({pq_test::path("numeric.parquet")}, o);
  CHECK_THAT(what, Catch::Contains("numeric.parquet: has no column 'nope'"));
  CHECK_THAT(what, Catch::Contains("'i8', 'i16', 'i32'"));
  // A later file without a column the first has.
  const std::string later = construction_error(
      {pq_test::path("numeric.parquet"), pq_test::path("other_types.parquet")});
  CHECK_THAT(later, Catch::Contains("other_types.parquet: has no column"));
}

TEST_CASE("parquet: types it cannot read are refused, naming the column, the type and the fix",
          "[parquet]") {
  PQ_TEST_NEEDS_FILES();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"u64", "uint64"}, {"dec", "decimal128(10, 2)"}, {"m", "map<"}, {"st", "struct<"},
      {"ls", "list<"}};
  for (const auto& [column, type] : cases) {
    INFO(column);
    ParquetShardsOptions o;
    o.columns = {column};
    const std::string what = construction_error({pq_test::path("bad_types.parquet")}, o);
    CHECK_THAT(what, Catch::Contains("column '" + column + "' has Arrow type " + type));
    CHECK_THAT(what, Catch::Contains("Fix: "));
  }
  ParquetShardsOptions image;
  image.image_columns.emplace("ok", mploader::vision::Compose(
                                        {mploader::vision::CenterCrop{{4, 4}}}));
  image.columns = {"ok"};
  CHECK_THAT(construction_error({pq_test::path("bad_types.parquet")}, image),
             Catch::Contains("image column 'ok' has Arrow type int32"));
}

TEST_CASE("parquet: a column of another type in a later file names both files and types",
          "[parquet]") {
  PQ_TEST_NEEDS_FILES();
  ParquetShardsOptions o;
  o.columns = {"i32"};
  const std::string what = construction_error(
      {pq_test::path("numeric.parquet"), pq_test::path("other_types.parquet")}, o);
  CHECK_THAT(what, Catch::Contains("other_types.parquet: column 'i32' has Arrow type int64"));
  CHECK_THAT(what, Catch::Contains("numeric.parquet has int32"));
}

TEST_CASE("parquet: a missing, foreign, truncated or damaged file is a clear error",
          "[parquet]") {
  PQ_TEST_NEEDS_FILES();
  CHECK_THAT(construction_error({pq_test::path("absent.parquet")}),
             Catch::Contains("absent.parquet: No such file or directory"));
  const std::string foreign = pq_test::path("foreign.parquet");
  std::ofstream(foreign) << "name,value\na,1\n";
  CHECK_THAT(construction_error({foreign}), Catch::Contains("not a Parquet file"));
  const std::string cut = copy_of("numeric.parquet", "cut.parquet");
  for (uintmax_t size : {std::filesystem::file_size(cut) / 2, uintmax_t{6}, uintmax_t{0}}) {
    std::filesystem::resize_file(cut, size);
    CHECK_THAT(construction_error({cut}), Catch::Contains("footer is damaged or cut short"));
  }
  // The footer's length field points before the start of the file.
  const std::string bad = copy_of("numeric.parquet", "bad_footer.parquet");
  const auto size = std::filesystem::file_size(bad);
  {
    std::fstream f(bad, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size - 8));
    const char huge[4] = {'\xff', '\xff', '\xff', '\x7f'};
    f.write(huge, 4);
  }
  CHECK_THAT(construction_error({bad}), Catch::Contains("bad_footer.parquet"));
  CHECK_THAT(construction_error({pq_test::folder()}), Catch::Contains("not a regular file"));
}

TEST_CASE("parquet: a footer that counts more rows than the file has bytes is refused",
          "[parquet]") {
  // A fuzzed footer: row group 0 claims 543,964,460,664 rows in a file of 5,292 bytes. Its
  // epoch plan would have held every row.
  const std::string forged =
      std::string(MPLOADER_TEST_DATA_DIR) + "/fuzz/parquet-rows-past-bytes.parquet";
  const std::string what = construction_error({forged});
  CHECK_THAT(what, Catch::Contains("parquet-rows-past-bytes.parquet: its footer counts "
                                   "543964460664 rows by row group 0 in a file of 5292 bytes"));
  CHECK_THAT(what, Catch::Contains("write or copy the file again"));
}

TEST_CASE("parquet: a file changed after the dataset was built fails the read, naming it",
          "[parquet]") {
  PQ_TEST_NEEDS_FILES();
  const std::string file = copy_of("numeric.parquet", "changing.parquet");
  ParquetShards data({file});
  (void)data.get(0);
  {
    std::ofstream(file, std::ios::app) << "more";
  }
  ParquetShards copy(data);  // a new process's view: it opens the file again
  REQUIRE_THROWS_WITH(copy.get(20), Catch::Contains("changing.parquet: the file changed after "
                                                    "the dataset was built"));
  // The reader already open notices too, on its next row group.
  REQUIRE_THROWS_WITH(data.get(40), Catch::Contains("changed"));
  std::filesystem::remove(file);
  REQUIRE_THROWS_WITH(ParquetShards(copy).get(0), Catch::Contains("cannot be opened now"));
}

TEST_CASE("parquet: a data page whose checksum does not match is an error naming the file, the "
          "row group and the column, never wrong values", "[parquet]") {
  PQ_TEST_NEEDS_FILES();
  const std::string file = copy_of("checksums.parquet", "damaged_pages.parquet");
  std::ifstream pages_json(pq_test::path("checksums.pages.json"));
  const nlohmann::json pages = nlohmann::json::parse(pages_json);  // [group][column] -> offset
  const int64_t half = (pq_test::kRows + 1) / 2;  // rows of row group 0
  // Row 5 of row group 1, in both of its data pages: x (int32) and y (float64).
  flip_value_byte(file, pages[1][0].get<int64_t>(), 5, 4);
  flip_value_byte(file, pages[1][1].get<int64_t>(), 5, 8);
  ParquetShards data({file});
  CHECK(data.get(3)["x"].item<int32_t>() == 3);  // row group 0 is whole
  CHECK(data.get(3)["y"].item<double>() == 0.75);
  const std::string where = "damaged_pages.parquet: row group 1 of 2: column 'x'";
  REQUIRE_THROWS_WITH(data.get(half + 5), Catch::Contains(where) &&
                                              Catch::Contains("checksum") &&
                                              Catch::Contains("The file is damaged: write or "
                                                              "copy it again"));
  // Through a worker the same: the batch fails, nothing of the row group is handed out.
  LoaderOptions o;
  o.batch_size = 8;
  o.num_workers = 1;
  auto shared = std::make_shared<ParquetShards>(std::vector<std::string>{file});
  try {
    Loader loader(shared, o);
    for (auto& batch : loader) CHECK(batch["x"].max().item<int32_t>() < half);
    FAIL("the damaged row group was read");
  } catch (const mploader::Error& e) {
    CHECK_THAT(e.what(), Catch::Contains(where) && Catch::Contains("checksum"));
  }
}

TEST_CASE("parquet: bad options name the option and the fix", "[parquet]") {
  PQ_TEST_NEEDS_FILES();
  const std::string file = pq_test::path("numeric.parquet");
  CHECK_THAT(construction_error({}), Catch::Contains("the list of files is empty"));
  CHECK_THAT(construction_error({file, pq_test::folder() + "/./numeric.parquet"}),
             Catch::Contains("listed twice"));
  ParquetShardsOptions o;
  o.columns = {"i8", "i8"};
  CHECK_THAT(construction_error({file}, o), Catch::Contains("columns lists 'i8' twice"));
  o = {};
  o.read_ahead = -1;
  CHECK_THAT(construction_error({file}, o), Catch::Contains("read_ahead is -1"));
  o = {};
  o.column_nulls["nope"] = NullPolicy::kFill;
  CHECK_THAT(construction_error({file}, o), Catch::Contains("column_nulls names 'nope'"));
  REQUIRE_THROWS_WITH(ParquetShards::from_directory(pq_test::path("absent")),
                      Catch::Contains("cannot list"));
  const std::string empty = pq_test::path("empty-dir");
  std::filesystem::create_directories(empty);
  REQUIRE_THROWS_WITH(ParquetShards::from_directory(empty),
                      Catch::Contains("holds no file ending in .parquet"));
}

TEST_CASE("parquet: write() on a dataset with text columns is refused", "[parquet]") {
  PQ_TEST_NEEDS_FILES();
  ParquetShards data({pq_test::path("text.parquet")});
  REQUIRE_FALSE(data.sample_layout().has_value());
  mploader::SampleLayout layout;
  std::vector<uint8_t*> bases;
  std::vector<size_t> sizes;
  mploader::SampleWriter out(layout, bases.data(), sizes.data(), 0);
  REQUIRE_THROWS_WITH(data.write(0, out), Catch::Contains("Call get()"));
}

// The component's errors are mploader::Errors: the file-list check it shares with TarShards
// (core/file_list.h) words its refusals as TarShards' does.
TEST_CASE("parquet: the file list's refusals are mploader::Errors worded as TarShards' are",
          "[parquet]") {
  using testing_errors::mploader_error_of;
  PQ_TEST_NEEDS_FILES();
  CHECK_THAT(mploader_error_of([] { ParquetShards(std::vector<std::string>{}); }),
             Catch::StartsWith("mploader: ParquetShards: the list of files is empty. Give at "
                               "least one file, or use ParquetShards::from_directory"));
  const std::string file = pq_test::path("numeric.parquet");
  const std::string linked = pq_test::path("numeric-linked.parquet");
  std::filesystem::remove(linked);
  std::filesystem::create_hard_link(file, linked);
  CHECK_THAT(mploader_error_of([&] { ParquetShards({file, linked}); }),
             Catch::StartsWith("mploader: ParquetShards: ") && Catch::Contains(linked) &&
                 Catch::Contains("are the same file, listed twice (device ") &&
                 Catch::Contains("List each file once"));
  std::filesystem::remove(linked);
}

}  // namespace test_parquet_errors
