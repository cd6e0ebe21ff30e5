// ImageFolder against hostile files: huge and sparse, a FIFO in place of an image, a large file
// whose buffer must not stay, a dataset of nothing but bad files, and a list file's entry that
// names no file.
#include "image_folder_test_support.h"

#include <mploader/loader.h>

#include <ATen/ATen.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <future>
#include <set>

namespace test_bad_files {

namespace fs = std::filesystem;
using namespace mploader::vision;
using vision_test::ScratchDir;
using vision_test::write_sample;

namespace {

Compose small() { return Compose({CenterCrop(8)}); }

int64_t index_of(const ImageFolder& data, const std::string& path) {
  for (size_t i = 0; i < data.size(); ++i) {
    if (data.path(static_cast<int64_t>(i)) == path) return static_cast<int64_t>(i);
  }
  FAIL("not listed: " << path);
  return -1;
}

// Resident memory of this process, in bytes.
int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

}  // namespace

TEST_CASE("vision: a 64 GiB file named .jpg is refused from its header, and kSkip skips it") {
  ScratchDir dir;
  vision_test::make_classes(dir.path, {"cat"}, 2);
  const std::string zeros = dir.path + "/cat/zz.jpg", huge = dir.path + "/cat/zy.jpg";
  fs::copy_file(dir.path + "/cat/0.jpg", huge);  // a real header, then 64 GiB of nothing
  std::ofstream(zeros).close();
  // Sparse: no disk block is written.
  if (truncate(huge.c_str(), int64_t{64} << 30) != 0 ||
      truncate(zeros.c_str(), int64_t{64} << 30) != 0) {
    WARN("skipped: this file system cannot hold a sparse 64 GiB file");
    return;
  }
  ImageFolder raise(dir.path, small());
  REQUIRE_THROWS_WITH(write_sample(raise, index_of(raise, zeros)),
                      Catch::Contains(zeros) && Catch::Contains("not a JPEG or PNG"));
  REQUIRE_THROWS_WITH(write_sample(raise, index_of(raise, huge)),
                      Catch::Contains(huge) && Catch::Contains("68719476736 bytes") &&
                          Catch::Contains("max_file_bytes"));
  ImageFolderOptions skip;
  skip.on_bad_image = OnBadImage::kSkip;
  auto data = std::make_shared<ImageFolder>(dir.path, small(), skip);
  mploader::LoaderOptions options;
  options.batch_size = 2;
  mploader::Loader loader(data, options);
  for (mploader::Batch& b : loader) (void)b;
  REQUIRE(loader.stats().skipped_samples == 2);
}

TEST_CASE("vision: a FIFO in place of an image is an error, not a hang") {
  ScratchDir dir;
  vision_test::make_classes(dir.path, {"cat"}, 2);
  ImageFolder data(dir.path, small());
  const std::string fifo = dir.path + "/cat/1.jpg";
  fs::remove(fifo);
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  auto load = std::async(std::launch::async, [&] { return write_sample(data, 1); });
  if (load.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    const int writer = open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // lets open() return
    if (writer >= 0) close(writer);
    load.wait();
    FAIL("loading a FIFO blocked in open() for 10 s");
  }
  REQUIRE_THROWS_WITH(load.get(), Catch::Contains(fifo) && Catch::Contains("not a regular file"));
}

TEST_CASE("vision: a large file does not leave its bytes resident after it is loaded") {
  ScratchDir dir;
  vision_test::make_classes(dir.path, {"cat"}, 1);
  // A real image with 96 MiB after its end (PIL ignores them too), and 96 MiB of text.
  const std::string padded = dir.path + "/cat/padded.jpg", text = dir.path + "/cat/text.jpg";
  std::vector<uint8_t> bytes = vision_test::read_bytes(dir.path + "/cat/0.jpg");
  bytes.resize(bytes.size() + (size_t{96} << 20), 0);
  vision_test::write_bytes(padded, bytes);
  std::fill(bytes.begin(), bytes.end(), 'x');
  vision_test::write_bytes(text, bytes);
  bytes = {};
  bytes.shrink_to_fit();
  ImageFolder data(dir.path, small());
  write_sample(data, index_of(data, dir.path + "/cat/0.jpg"));
  const int64_t before = resident_bytes();
  write_sample(data, index_of(data, padded));
  REQUIRE_THROWS(write_sample(data, index_of(data, text)));
  const int64_t grown = resident_bytes() - before;
  INFO("resident memory grew by " << grown / 1048576 << " MiB");
  REQUIRE(grown < (int64_t{32} << 20));
}

TEST_CASE("vision: kSkip over a dataset of bad files counts the files there are") {
  ScratchDir dir;
  for (const char* name : {"cat/a.jpg", "cat/b.jpg", "dog/c.png"}) {
    fs::create_directories(fs::path(dir.path + "/" + name).parent_path());
    std::ofstream(dir.path + "/" + name) << "not an image\n";
  }
  ImageFolderOptions skip;
  skip.on_bad_image = OnBadImage::kSkip;
  ImageFolder data(dir.path, small(), skip);
  REQUIRE_THROWS_WITH(write_sample(data, 0),
                      Catch::Contains(dir.path + "/cat/a.jpg") &&
                          Catch::Contains("nor any of the other 2 files") &&
                          !Catch::Contains("next 64"));
}

TEST_CASE("vision: a list file naming a missing file says so, naming both") {
  ScratchDir dir;
  vision_test::make_classes(dir.path, {"cat"}, 1);
  const std::string list = dir.path + "/list.txt";
  std::ofstream(list) << "cat/0.jpg 0\ncat/missing.jpg 0\n";
  std::shared_ptr<ImageFolder> data = ImageFolder::from_list(list, small());
  REQUIRE(vision_test::write_sample(*data, 0) == 0);
  REQUIRE_THROWS_WITH(vision_test::write_sample(*data, 1),
                      Catch::Contains(dir.path + "/cat/missing.jpg") && Catch::Contains(list) &&
                          Catch::Contains("does not exist") &&
                          !Catch::Contains("folder was scanned"));
}

}  // namespace test_bad_files
