// Memory-mapped .npy arrays: read as NumPy wrote them, bad files named, and shared rather than
// copied by the workers (their private memory stays flat across epochs).
#include "crash_test_support.h"

#include <mploader/npy.h>

#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <sstream>

namespace test_npy {

using namespace mploader;

namespace {

const std::string kData = std::string(MPLOADER_TEST_DATA_DIR) + "/npy/";

std::string error_of(const std::string& path) {
  try {
    NpyArray array(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A version-1 .npy of float32 [rows, cols] holding row index in each element, written here so
// the test can make it large.
void write_npy(const std::string& path, int64_t rows, int64_t cols) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" +
                       std::to_string(rows) + ", " + std::to_string(cols) + "), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  const uint16_t length = static_cast<uint16_t>(header.size());
  out.put(static_cast<char>(length & 0xff)).put(static_cast<char>(length >> 8));
  out << header;
  std::vector<float> row(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    std::fill(row.begin(), row.end(), static_cast<float>(r));
    out.write(reinterpret_cast<const char*>(row.data()), static_cast<std::streamsize>(cols * 4));
  }
}

// Private_Dirty and Pss of a process, in bytes, from /proc/<pid>/smaps_rollup.
std::map<std::string, int64_t> rollup(int pid) {
  std::map<std::string, int64_t> out;
  std::ifstream in("/proc/" + std::to_string(pid) + "/smaps_rollup");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    std::string key;
    int64_t kb = 0;
    if (s >> key >> kb) out[key] = kb * 1024;
  }
  return out;
}

}  // namespace

TEST_CASE("npy: arrays NumPy wrote read back exactly", "[npy]") {
  NpyArray images(kData + "images_f32.npy");
  CHECK(images.dtype() == at::kFloat);
  CHECK(images.shape() == std::vector<int64_t>{5, 2, 3});
  CHECK(images.row(1).sizes() == at::IntArrayRef({2, 3}));
  CHECK(images.row(1)[1][2].item<float>() == Approx(1.1f));
  NpyArray labels(kData + "labels_i64.npy");
  CHECK(labels.dtype() == at::kLong);
  CHECK(labels.row(4).item<int64_t>() == 28);
  CHECK(labels.tensor().sum().item<int64_t>() == 70);
  NpyArray mask(kData + "mask_bool.npy");
  CHECK(mask.dtype() == at::kBool);
  CHECK(mask.tensor().sum().item<int64_t>() == 3);
  NpyArray v2(kData + "v2_u8.npy");
  CHECK(v2.dtype() == at::kByte);
  CHECK(v2.row(3).item<int64_t>() == 3);
  CHECK_THROWS_AS(labels.row(5), mploader::OptionError);
}

TEST_CASE("npy: every bad file is a clear error naming it", "[npy]") {
  CHECK_THAT(error_of(kData + "fortran_f8.npy"), Catch::Contains("fortran_f8.npy") &&
                                                     Catch::Contains("Fortran"));
  CHECK_THAT(error_of(kData + "bigendian_i4.npy"), Catch::Contains("big-endian"));
  CHECK_THAT(error_of(kData + "truncated_i64.npy"),
             Catch::Contains("truncated") && Catch::Contains("168 bytes") &&
                 Catch::Contains("160"));
  CHECK_THAT(error_of(kData + "missing.npy"), Catch::Contains("missing.npy") &&
                                                  Catch::Contains("No such file"));
  CHECK_THAT(error_of(std::string(MPLOADER_TEST_DATA_DIR) + "/typo.toml"),
             Catch::Contains("not a .npy file"));
  CHECK_THROWS_WITH(NpyDataset({{"x", kData + "images_f32.npy"}, {"y", kData + "v2_u8.npy"}}),
                    Catch::Contains("4 rows") && Catch::Contains("5"));
}

TEST_CASE("npy: a loader over NpyDataset delivers the rows", "[npy][process]") {
  auto data = std::make_shared<NpyDataset>(std::vector<std::pair<std::string, std::string>>{
      {"image", kData + "images_f32.npy"}, {"label", kData + "labels_i64.npy"}});
  LoaderOptions o;
  o.num_workers = 2;
  o.batch_size = 2;
  Loader loader(data, o);
  int64_t label_sum = 0;
  for (Batch& b : loader) {
    label_sum += b["label"].sum().item<int64_t>();
    CHECK(b["image"].sizes()[1] == 2);
  }
  CHECK(label_sum == 70);
}

TEST_CASE("npy: rows written in place equal the rows get() returns", "[npy][process]") {
  auto data = std::make_shared<NpyDataset>(std::vector<std::pair<std::string, std::string>>{
      {"image", kData + "images_f32.npy"}, {"label", kData + "labels_i64.npy"}});
  struct GetOnly : Dataset {  // the same rows, through get() and a collating copy
    explicit GetOnly(std::shared_ptr<NpyDataset> d) : d(std::move(d)) {}
    size_t size() const override { return d->size(); }
    Sample get(int64_t i) override { return d->get(i); }
    std::shared_ptr<NpyDataset> d;
  };
  REQUIRE(data->sample_layout().has_value());
  for (int64_t workers : {0, 2}) {
    LoaderOptions o;
    o.num_workers = workers;
    o.batch_size = 3;
    o.shuffle = true;
    Loader in_place(data, o), copied(std::make_shared<GetOnly>(data), o);
    size_t batches = 0;
    for (auto a = in_place.next(), b = copied.next(); a || b; a = in_place.next(), b = copied.next()) {
      REQUIRE((a && b));
      CHECK(a->indices() == b->indices());
      CHECK((*a)["image"].equal((*b)["image"]));
      CHECK((*a)["label"].equal((*b)["label"]));
      ++batches;
    }
    CHECK(batches > 0);
  }
}

TEST_CASE("npy: workers share the mapped array, and their private memory stays flat",
          "[npy][process]") {
  const std::string path = crash_testing::fresh_dir() + "/big.npy";
  constexpr int64_t kRows = 16384, kCols = 1024;  // 64 MiB of float32
  write_npy(path, kRows, kCols);
  auto data = std::make_shared<NpyDataset>(
      std::vector<std::pair<std::string, std::string>>{{"x", path}});
  LoaderOptions o;
  o.num_workers = 2;
  o.batch_size = 64;
  o.persistent_workers = true;
  Loader loader(data, o);
  std::map<int, std::map<std::string, int64_t>> after_first;
  for (int epoch = 0; epoch < 3; ++epoch) {
    double sum = 0;
    for (Batch& b : loader) sum += b["x"].select(1, 0).sum().item<double>();
    CHECK(sum == Approx(static_cast<double>(kRows) * (kRows - 1) / 2));
    if (epoch == 0) {
      for (int pid : loader.worker_pids()) after_first[pid] = rollup(pid);
    }
  }
  for (int pid : loader.worker_pids()) {
    auto now = rollup(pid);
    INFO("worker " << pid << " Private_Dirty " << now["Private_Dirty:"] << " Pss " << now["Pss:"]);
    CHECK(now["Private_Dirty:"] - after_first[pid]["Private_Dirty:"] < (4 << 20));
    // Below the 64 MiB array: not copied (a copying worker measures >= 64 MiB, next test).
    // The margin is for the worker's own heap: about 35 MiB under ASan, whose allocator keeps
    // freed memory in quarantine.
    CHECK(now["Private_Dirty:"] < (48 << 20));
  }
}

namespace {
// The mistake the mapping avoids: each worker takes its own copy of the array.
class CopyingDataset : public Dataset {
 public:
  explicit CopyingDataset(const std::string& path) : array_(path) {}
  size_t size() const override { return static_cast<size_t>(array_.rows()); }
  Sample get(int64_t index) override {
    if (!copy_.defined()) copy_ = array_.tensor().clone();
    return {{"x", copy_[index]}};
  }

 private:
  NpyArray array_;
  at::Tensor copy_;
};
}  // namespace

TEST_CASE("npy: the same measurement sees a worker that copies the array", "[npy][process]") {
  const std::string path = crash_testing::fresh_dir() + "/big.npy";
  write_npy(path, 16384, 1024);
  LoaderOptions o;
  o.num_workers = 1;
  o.batch_size = 64;
  o.persistent_workers = true;
  o.max_batch_bytes = 1 << 20;  // no probe: the main process makes no copy
  Loader loader(std::make_shared<CopyingDataset>(path), o);
  while (loader.next()) {
  }
  CHECK(rollup(loader.worker_pids()[0])["Private_Dirty:"] >= (64 << 20));
}

}  // namespace test_npy
