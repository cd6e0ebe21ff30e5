// H5Dataset against h5py: every value of every type equals what h5py reads, with 0, 1 and 2
// workers and every start method; the training process never opens the file; sorted and
// shuffled batches; text fields; a SWMR-written file.
#include <catch2/catch.hpp>

#include "components/hdf5/tests/h5_files.h"

#include <mploader/hdf5/h5_dataset.h>
#include <mploader/loader.h>
#include <mploader/sample_writer.h>

#include <ATen/ATen.h>

#include <unistd.h>

#include <map>
#include <memory>

namespace test_h5_dataset {

using mploader::Batch;
using mploader::Loader;
using mploader::LoaderOptions;
using mploader::StartMethod;
using mploader::hdf5::H5Dataset;
using mploader::hdf5::H5DatasetOptions;
using mploader::hdf5::H5Field;

namespace {

const std::vector<std::string> kNumericFields = {"index",  "images", "f32", "f64",
                                                 "f16_be", "u16",    "u32", "i8",
                                                 "i16_be", "flags",  "colour", "group/nested"};

std::shared_ptr<H5Dataset> numeric_dataset(H5DatasetOptions options = {}) {
  std::vector<H5Field> fields;
  for (const auto& f : kNumericFields) fields.push_back({f, "/" + f});
  return std::make_shared<H5Dataset>(h5_test::path("numeric.h5"), fields, options);
}

// Every row of the epoch once, each field equal to h5py's read of that row.
void check_epoch(Loader& loader, const std::string& file, const std::vector<std::string>& fields) {
  std::map<std::string, at::Tensor> expected;
  for (const auto& f : fields) expected[f] = h5_test::reference(file, f);
  std::vector<int> seen(h5_test::kRows, 0);
  for (Batch& batch : loader) {
    const at::Tensor index = batch["index"];
    for (int64_t r = 0; r < index.size(0); ++r) ++seen.at(index[r].item<int64_t>());
    for (const auto& f : fields) {
      INFO("field " << f);
      const at::Tensor want = expected[f].index_select(0, index);
      REQUIRE(batch[f].scalar_type() == want.scalar_type());
      REQUIRE(at::equal(batch[f], want));
    }
  }
  REQUIRE(std::count(seen.begin(), seen.end(), 1) == h5_test::kRows);
}


}  // namespace

TEST_CASE("hdf5: every numeric type equals h5py's read with 0, 1 and 2 workers", "[hdf5]") {
  H5_TEST_NEEDS_FILES();
  auto data = numeric_dataset();
  REQUIRE(data->size() == static_cast<size_t>(h5_test::kRows));
  REQUIRE(data->sample_layout().has_value());
  const auto& info = data->fields();
  CHECK(info[1].chunk == std::vector<int64_t>{4, 3, 8, 8});
  CHECK(info[1].filters == std::vector<std::string>{"deflate"});
  CHECK(info[2].filters == std::vector<std::string>{"shuffle", "deflate"});
  CHECK(info[5].file_type == "uint16 (read as int32)");
  CHECK(info[10].file_type == "enum of int16");
  for (int64_t workers : {0, 1, 2}) {
    INFO(workers << " workers");
    LoaderOptions o;
    o.batch_size = 7;
    o.num_workers = workers;
    o.shuffle = workers != 1;  // 1 worker: sorted batches, read straight into the slot
    check_epoch(*std::make_unique<Loader>(data, o), "numeric", kNumericFields);
  }
  // No chunk cache: every row decompresses its chunk again, and reads the same.
  H5DatasetOptions no_cache;
  no_cache.chunk_cache_bytes = 0;
  LoaderOptions o;
  o.batch_size = 5;
  o.num_workers = 1;
  o.shuffle = true;
  Loader loader(numeric_dataset(no_cache), o);
  check_epoch(loader, "numeric", kNumericFields);
}

// The field note's failure: a file handle shared across fork gives wrong reads. Here several
// workers read one file at once, shuffled, and every sample is right; the training process
// never opened it.
TEST_CASE("hdf5: three workers of one file read every sample right with fork, spawn and "
          "forkserver, and the training process never opens it", "[hdf5]") {
  H5_TEST_NEEDS_FILES();
  for (StartMethod method : {StartMethod::kFork, StartMethod::kSpawn, StartMethod::kForkserver}) {
    INFO("start method " << static_cast<int>(method));
    auto data = numeric_dataset();
    LoaderOptions o;
    o.batch_size = 4;
    o.num_workers = 3;
    o.shuffle = true;
    o.start_method = method;
    Loader loader(data, o);
    check_epoch(loader, "numeric", kNumericFields);
    REQUIRE_FALSE(data->is_open_here());
    REQUIRE_FALSE(test_files::holds_descriptor(h5_test::path("numeric.h5")));
  }
}

TEST_CASE("hdf5: a dataset read in the training process, then forked into workers, reads "
          "right in each", "[hdf5]") {
  H5_TEST_NEEDS_FILES();
  auto data = numeric_dataset();
  LoaderOptions o;
  o.batch_size = 16;
  {
    Loader in_process(data, o);
    check_epoch(in_process, "numeric", kNumericFields);
  }
  REQUIRE(data->is_open_here());
  o.num_workers = 2;
  o.shuffle = true;
  Loader workers(data, o);
  check_epoch(workers, "numeric", kNumericFields);
}

TEST_CASE("hdf5: write_batch reads sorted, shuffled and repeated rows into their batch rows",
          "[hdf5]") {
  H5_TEST_NEEDS_FILES();
  auto data = numeric_dataset();
  const mploader::SampleLayout layout = *data->sample_layout();
  const std::vector<std::vector<int64_t>> batches = {{1, 2, 3, 10, 59}, {5, 3, 5, 0, 59, 3}};
  for (const auto& rows : batches) {
    std::vector<at::Tensor> out;
    std::vector<uint8_t*> bases;
    std::vector<size_t> bytes;
    for (const auto& field : layout) {
      std::vector<int64_t> shape = {static_cast<int64_t>(rows.size())};
      shape.insert(shape.end(), field.shape.begin(), field.shape.end());
      out.push_back(at::empty(shape, at::TensorOptions().dtype(field.dtype)));
      bases.push_back(static_cast<uint8_t*>(out.back().data_ptr()));
      bytes.push_back(field.nbytes());
    }
    mploader::BatchWriter writer(layout, bases.data(), bytes.data(), rows.size());
    data->write_batch(rows.data(), rows.size(), writer);
    const at::Tensor index = at::tensor(rows, at::kLong);
    for (size_t k = 0; k < layout.size(); ++k) {
      INFO("field " << layout[k].name);
      const at::Tensor want = h5_test::reference("numeric", kNumericFields[k]);
      REQUIRE(at::equal(out[k], want.index_select(0, index)));
    }
  }
}

TEST_CASE("hdf5: variable- and fixed-length strings are text fields, with 0 and 2 workers and "
          "spawn", "[hdf5]") {
  H5_TEST_NEEDS_FILES();
  auto data = std::make_shared<H5Dataset>(
      h5_test::path("strings.h5"),
      std::vector<H5Field>{{"text", "/text"}, {"ascii", "/ascii"}, {"index", "/index"},
                           {"vec", "/vec"}});
  REQUIRE_FALSE(data->sample_layout().has_value());  // text: samples come from get()
  CHECK(data->fields()[0].file_type == "vlen string (utf-8)");
  CHECK(data->fields()[1].file_type == "string[12]");
  const int64_t first = 0;
  const mploader::SampleLayout no_layout;
  mploader::BatchWriter none(no_layout, nullptr, nullptr, 1);
  REQUIRE_THROWS_AS(data->write_batch(&first, 1, none), mploader::Error);
  const auto text = h5_test::reference_texts("strings", "text");
  const auto ascii = h5_test::reference_texts("strings", "ascii");
  const at::Tensor vec = h5_test::reference("strings", "vec");
  for (auto [workers, method] : {std::pair{0, StartMethod::kFork}, {2, StartMethod::kFork},
                                 {2, StartMethod::kSpawn}}) {
    INFO(workers << " workers, start method " << static_cast<int>(method));
    LoaderOptions o;
    o.batch_size = 8;
    o.num_workers = workers;
    o.shuffle = true;
    o.start_method = method;
    Loader loader(data, o);
    int64_t rows = 0;
    for (Batch& batch : loader) {
      const at::Tensor index = batch["index"];
      for (int64_t r = 0; r < index.size(0); ++r) {
        const auto i = static_cast<size_t>(index[r].item<int64_t>());
        REQUIRE(batch.text("text")[r] == text[i]);
        REQUIRE(batch.text("ascii")[r] == ascii[i]);
        ++rows;
      }
      REQUIRE(at::equal(batch["vec"], vec.index_select(0, index)));
    }
    REQUIRE(rows == h5_test::kRows);
  }
}

TEST_CASE("hdf5: a file written in SWMR mode reads right, opened for SWMR reading or not",
          "[hdf5]") {
  H5_TEST_NEEDS_FILES();
  for (bool swmr : {false, true}) {
    INFO("swmr_read " << swmr);
    H5DatasetOptions options;
    options.swmr_read = swmr;
    auto data = std::make_shared<H5Dataset>(
        h5_test::path("swmr.h5"), std::vector<H5Field>{{"x", "/x"}, {"index", "/index"}},
        options);
    REQUIRE(data->fields()[0].chunk == std::vector<int64_t>{8, 4});
    LoaderOptions o;
    o.batch_size = 6;
    o.num_workers = 2;
    o.shuffle = true;
    Loader loader(data, o);
    check_epoch(loader, "swmr", {"x", "index"});
  }
}

TEST_CASE("hdf5: the recipe rebuilds the dataset without probing, and a damaged recipe is an "
          "error", "[hdf5]") {
  H5_TEST_NEEDS_FILES();
  auto data = numeric_dataset();
  const auto recipe = data->recipe();
  REQUIRE(recipe.has_value());
  REQUIRE(recipe->factory == "mploader.hdf5.H5Dataset");
  auto again = H5Dataset::from_recipe(recipe->config);
  REQUIRE(again->size() == data->size());
  REQUIRE(again->fields().size() == data->fields().size());
  REQUIRE_FALSE(again->is_open_here());
  REQUIRE_THROWS_WITH(H5Dataset::from_recipe("{\"file\": 3}"),
                      Catch::Matchers::Contains("H5Dataset recipe: malformed"));
  std::string tampered = recipe->config;
  tampered.replace(tampered.find("\"name\":\"images\""), 15, "\"name\":\"imagez\"");
  REQUIRE_THROWS_WITH(H5Dataset::from_recipe(tampered),
                      Catch::Matchers::Contains("does not match it"));
}

}  // namespace test_h5_dataset
