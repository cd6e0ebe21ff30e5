// What H5Dataset says about input a user can get wrong: each is an Error that names the file,
// the field and what to do; none crashes the training process or reads wrong data.
#include <catch2/catch.hpp>

#include "components/hdf5/tests/h5_files.h"
#include "tests/error_text.h"
#include "tests/stderr_capture.h"

#include <mploader/errors.h>
#include <mploader/hdf5/h5_dataset.h>
#include <mploader/loader.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iterator>
#include <thread>

namespace test_h5_errors {

using Catch::Matchers::Contains;
using mploader::Loader;
using mploader::LoaderOptions;
using mploader::hdf5::H5Dataset;
using mploader::hdf5::H5DatasetOptions;
using mploader::hdf5::H5Field;

namespace {

// The message H5Dataset's construction throws, or "" when it does not.
std::string error_of(const std::string& file, std::vector<H5Field> fields,
                     H5DatasetOptions options = {}) {
  try {
    H5Dataset data(h5_test::path(file), std::move(fields), options);
  } catch (const mploader::Error& e) {
    return e.what();
  }
  return "";
}

// The message of what `read` throws, or "" when it does not.
template <typename Read>
std::string thrown_by(Read&& read) {
  try {
    read();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// /x of damaged_chunk.h5 does not inflate in its chunk of rows 320 to 383; chunks.h5 is whole.
std::shared_ptr<H5Dataset> chunk_dataset(const std::string& path) {
  return std::make_shared<H5Dataset>(path, std::vector<H5Field>{{"x", "/x"}, {"index", "/index"}});
}

std::string epoch_error(const std::shared_ptr<H5Dataset>& data, const LoaderOptions& o) {
  return thrown_by([&] {
    Loader loader(data, o);
    for (auto& batch : loader) (void)batch;
  });
}

// An h5py process holding `file` open in 'a' mode (HDF5 locks it) until destroyed.
class Writer {
 public:
  explicit Writer(const std::string& file) : stop_(file + ".stop") {
    std::filesystem::remove(stop_);
    const std::string command = std::string(MPLOADER_PYTHON) +
        " -c 'import h5py, os, sys, time\n"
        "f = h5py.File(sys.argv[1], \"a\"); f.flush(); print(\"open\", flush=True)\n"
        "for _ in range(1200):\n"
        "    if os.path.exists(sys.argv[2]): break\n"
        "    time.sleep(0.05)' '" + file + "' '" + stop_ + "'";
    pipe_ = ::popen(command.c_str(), "r");
    char line[16] = {};
    REQUIRE((pipe_ != nullptr && std::fgets(line, sizeof line, pipe_) != nullptr));
    REQUIRE(std::string(line) == "open\n");
  }
  ~Writer() {
    std::ofstream(stop_) << "stop";
    if (pipe_ != nullptr) ::pclose(pipe_);
  }

 private:
  std::string stop_;
  FILE* pipe_ = nullptr;
};

}  // namespace

TEST_CASE("hdf5: a missing dataset path names the file and the datasets it holds", "[hdf5]") {
  H5_TEST_NEEDS_FILES();
  const std::string e = error_of("numeric.h5", {{"x", "/nope"}});
  CHECK_THAT(e, Contains("numeric.h5: no dataset at '/nope'. The file holds 12 datasets: "));
  CHECK_THAT(e, Contains("/group/nested"));
  CHECK_THAT(e, Contains("/index"));
  CHECK_THAT(e, Contains("Fix: name one of those paths"));
}

TEST_CASE("hdf5: fields of different first dimensions are named with their rows", "[hdf5]") {
  H5_TEST_NEEDS_FILES();
  CHECK_THAT(error_of("bad.h5", {{"a", "/a"}, {"b", "/b"}}),
             Contains("bad.h5: field 'b' (/b) has 11 rows but 'a' (/a) has 10: every field "
                      "needs one row per sample"));
}

TEST_CASE("hdf5: types and shapes it cannot read are refused, naming the field", "[hdf5]") {
  H5_TEST_NEEDS_FILES();
  CHECK_THAT(error_of("bad.h5", {{"s", "/scalar"}}), Contains("field 's' (/scalar, int64 []) "
                                                              "is a scalar"));
  CHECK_THAT(error_of("bad.h5", {{"u", "/u64"}}),
             Contains("field 'u' (/u64, uint64 [10]): uint64 has no torch type"));
  CHECK_THAT(error_of("bad.h5", {{"p", "/pairs"}}),
             Contains("field 'p' (/pairs, compound [10]): compound elements have no tensor type"));
  CHECK_THAT(error_of("bad.h5", {{"t", "/strings2d"}}),
             Contains("a string dataset must be one-dimensional"));
  CHECK_THAT(error_of("bad.h5", {{"z", "/lzf"}}),
             Contains("field 'z' (/lzf) is compressed with lzf"));
}

TEST_CASE("hdf5: a missing, truncated or foreign file is a clear error, never a crash",
          "[hdf5]") {
  H5_TEST_NEEDS_FILES();
  CHECK_THAT(error_of("absent.h5", {{"x", "/x"}}),
             Contains("absent.h5: No such file or directory. Fix: check the path"));
  CHECK_THAT(error_of("not_hdf5.h5", {{"x", "/x"}}), Contains("not_hdf5.h5: not an HDF5 file"));
  const std::string cut = error_of("truncated.h5", {{"index", "/index"}});
  CHECK_THAT(cut, Contains("truncated.h5: libhdf5 cannot open it (truncated file"));
  CHECK_THAT(cut, Contains("Fix: the file is damaged or cut short"));
  CHECK_THAT(error_of("numeric.h5", {}), Contains("no fields"));
  CHECK_THAT(error_of("numeric.h5", {{"a", "/index"}, {"a", "/f64"}}),
             Contains("field name 'a' (/f64) is given twice"));
  H5DatasetOptions bad;
  bad.chunk_cache_bytes = -1;
  CHECK_THAT(error_of("numeric.h5", {{"a", "/index"}}, bad), Contains("chunk_cache_bytes is -1"));
}

TEST_CASE("hdf5: a file changed after the dataset was built fails the batch, naming it",
          "[hdf5]") {
  H5_TEST_NEEDS_FILES();
  const std::string copy = h5_test::path("changed.h5");
  std::filesystem::copy_file(h5_test::path("numeric.h5"), copy,
                             std::filesystem::copy_options::overwrite_existing);
  auto data = std::make_shared<H5Dataset>(copy, std::vector<H5Field>{{"index", "/index"}});
  std::ofstream(copy, std::ios::app) << "appended";
  for (int64_t workers : {0, 1}) {
    LoaderOptions o;
    o.num_workers = workers;
    o.batch_size = 4;
    try {
      Loader loader(data, o);
      for (auto& batch : loader) (void)batch;
      FAIL("the changed file was read");
    } catch (const mploader::Error& e) {
      CHECK_THAT(e.what(), Contains("changed.h5: changed after the dataset was built"));
      CHECK_THAT(e.what(), Contains("Fix: build the dataset again"));
    }
  }
}

TEST_CASE("hdf5: a failed read prints nothing of libhdf5's to stderr, in any thread", "[hdf5]") {
  H5_TEST_NEEDS_FILES();
  auto data = chunk_dataset(h5_test::path("damaged_chunk.h5"));
  testing_datasets::StderrCapture capture;
  (void)data->get(0);  // this thread calls libhdf5 first
  std::string in_thread;
  std::thread([&] { in_thread = thrown_by([&] { data->get(330); }); }).join();
  const std::string here = thrown_by([&] { data->get(331); });
  LoaderOptions o;
  o.batch_size = 16;
  o.num_workers = 1;
  const std::string in_worker = epoch_error(data, o);
  const std::string printed = capture.text();
  for (const std::string& e : {in_thread, here, in_worker}) {
    CHECK_THAT(e, Contains("damaged_chunk.h5: field 'x' (/x)"));
  }
  CHECK_THAT(printed, !Contains("HDF5-DIAG"));
  CHECK_THAT(printed, !Contains("H5Dread"));
}

TEST_CASE("hdf5: a damaged chunk is named by its rows, whatever rows the batch asked for",
          "[hdf5]") {
  H5_TEST_NEEDS_FILES();
  auto data = chunk_dataset(h5_test::path("damaged_chunk.h5"));
  for (int64_t workers : {0, 1}) {
    for (bool shuffle : {true, false}) {
      INFO(workers << " workers, shuffle " << shuffle);
      LoaderOptions o;
      o.batch_size = 48;  // sorted: rows 288 to 335 hold the damaged chunk's first rows
      o.num_workers = workers;
      o.shuffle = shuffle;
      const std::string e = epoch_error(data, o);
      CHECK_THAT(e, Contains("damaged_chunk.h5: field 'x' (/x): its chunk of rows 320 to 383 "
                             "cannot be read"));
      CHECK_THAT(e, Contains("Fix: the file is damaged"));
    }
  }
  CHECK_THAT(thrown_by([&] { data->get(383); }), Contains("its chunk of rows 320 to 383"));
  CHECK(data->get(384)["index"].item<int64_t>() == 384);
}

TEST_CASE("hdf5: a file another process holds open for writing is named as such, with the fix",
          "[hdf5]") {
  H5_TEST_NEEDS_FILES();
  const char* locking = std::getenv("HDF5_USE_FILE_LOCKING");
  if (locking != nullptr && std::string(locking) == "FALSE") {
    WARN("skipped: HDF5_USE_FILE_LOCKING=FALSE turns off the lock this test is about");
    return;
  }
  const std::string file = h5_test::path("held.h5");
  std::filesystem::copy_file(h5_test::path("numeric.h5"), file,
                             std::filesystem::copy_options::overwrite_existing);
  Writer writer(file);
  const std::string e = error_of("held.h5", {{"index", "/index"}});
  CHECK_THAT(e, Contains("held.h5: another process holds the file open for writing"));
  CHECK_THAT(e, Contains("unable to lock file"));
  CHECK_THAT(e, Contains("Fix: close the file in the writer"));
  CHECK_THAT(e, Contains("HDF5_USE_FILE_LOCKING=FALSE"));
  CHECK_THAT(e, !Contains("damaged"));
}

TEST_CASE("hdf5: a file rewritten in place while a process has it open is named as changed, "
          "not damaged", "[hdf5]") {
  H5_TEST_NEEDS_FILES();
  const std::string file = h5_test::path("rewritten.h5");
  std::filesystem::copy_file(h5_test::path("chunks.h5"), file,
                             std::filesystem::copy_options::overwrite_existing);
  auto data = chunk_dataset(file);
  CHECK(data->get(0)["index"].item<int64_t>() == 0);  // this process has it open now
  {
    // Rewritten in place (same file, same size): its chunk of rows 320 to 383 now differs.
    std::ifstream in(h5_test::path("damaged_chunk.h5"), std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), {});
    std::fstream(file, std::ios::in | std::ios::out | std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  std::filesystem::last_write_time(
      file, std::filesystem::last_write_time(file) + std::chrono::seconds(2));
  const std::string e = thrown_by([&] { data->get(330); });
  CHECK_THAT(e, Contains("rewritten.h5: changed after the dataset was built"));
  CHECK_THAT(e, Contains("Fix: build the dataset again"));
  CHECK_THAT(e, !Contains("damaged"));
}

// The component's errors are mploader::Errors: one catch (const mploader::Error&) takes an
// index outside the rows and a dataset path the file does not hold alike.
TEST_CASE("hdf5: an index outside the rows and a missing dataset path are both mploader::Errors",
          "[hdf5]") {
  using testing_errors::mploader_error_of;
  H5_TEST_NEEDS_FILES();
  H5Dataset data(h5_test::path("numeric.h5"), {{"x", "/f64"}});
  const int64_t rows = static_cast<int64_t>(data.size());
  CHECK_THAT(mploader_error_of([&] { (void)data.get(rows); }),
             Catch::StartsWith("mploader: H5Dataset: ") &&
                 Contains("index " + std::to_string(rows) + " is outside its " +
                          std::to_string(rows) + " rows"));
  CHECK_THROWS_AS(data.get(-1), mploader::OptionError);
  CHECK_THAT(mploader_error_of([] { H5Dataset(h5_test::path("numeric.h5"), {{"x", "/nope"}}); }),
             Contains("no dataset at '/nope'"));
}

}  // namespace test_h5_errors
