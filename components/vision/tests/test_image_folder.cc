// ImageFolder: listing, the scan cache, bad folders and files, the skip policy, and augmentation
// that is the same with any number of workers, any start method, and after a resume.
#include <catch2/catch.hpp>

#include <mploader/errors.h>
#include <mploader/loader.h>
#include <mploader/registry.h>
#include <mploader/vision/image_folder.h>

#include <ATen/ATen.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <unistd.h>

namespace test_image_folder {

namespace fs = std::filesystem;
using namespace mploader::vision;

namespace {

// A fresh folder made by make_image_folder.py; empty when Python or PIL is missing.
std::string make_folder(bool bad) {
  const std::string dir = fs::temp_directory_path() / ("mploader-vision-" +
                                                       std::to_string(getpid()) + "-" +
                                                       std::to_string(std::rand()));
  const std::string command = std::string(MPLOADER_PYTHON) + " " MPLOADER_COMPONENT_TEST_DIR
                              "/make_image_folder.py " + dir + (bad ? " --bad" : "") +
                              " 2>&1";
  if (std::system(command.c_str()) != 0) return "";
  return dir;
}

struct Folder {
  explicit Folder(bool bad = false) : root(make_folder(bad)) {}
  ~Folder() {
    if (!root.empty()) fs::remove_all(root);
  }
  std::string root;
};

#define REQUIRE_FOLDER(folder)                                                         \
  if ((folder).root.empty()) {                                                         \
    WARN("skipped: " MPLOADER_PYTHON " cannot make images (needs pillow and numpy: " \
         "scripts/install-deps)");                                                     \
    return;                                                                            \
  }

Compose train_transform() {
  return Compose({RandomResizedCrop(32), RandomHorizontalFlip(), ToTensor(),
                  Normalize({0.485, 0.456, 0.406}, {0.229, 0.224, 0.225})});
}

// Every batch of one epoch, images and labels concatenated.
std::pair<at::Tensor, at::Tensor> load_epoch(std::shared_ptr<ImageFolder> data,
                                             mploader::LoaderOptions options, uint64_t epoch) {
  mploader::Loader loader(data, options);
  loader.set_epoch(epoch);
  std::vector<at::Tensor> images, labels;
  for (mploader::Batch& b : loader) {
    images.push_back(b["image"].clone());
    labels.push_back(b["label"].clone());
  }
  return {at::cat(images), at::cat(labels)};
}

mploader::LoaderOptions options_with(int workers, mploader::StartMethod method) {
  mploader::LoaderOptions o;
  o.batch_size = 4;
  o.num_workers = workers;
  o.shuffle = true;
  o.seed = 11;
  o.start_method = method;
  return o;
}

}  // namespace

TEST_CASE("vision: ImageFolder lists class folders as torchvision does") {
  Folder folder;
  REQUIRE_FOLDER(folder);
  ImageFolder data(folder.root, train_transform());
  REQUIRE(data.classes() == std::vector<std::string>{"ant", "cat", "dog"});
  REQUIRE(data.size() == 3 * 7);  // six images and nested/n.JPG each; notes.txt is none
  for (size_t i = 0; i < data.size(); ++i) {
    const std::string& p = data.path(static_cast<int64_t>(i));
    REQUIRE(p.find("/" + data.classes()[data.label(static_cast<int64_t>(i))] + "/") !=
            std::string::npos);
    if (i > 0 && data.label(static_cast<int64_t>(i)) == data.label(static_cast<int64_t>(i - 1))) {
      REQUIRE(data.path(static_cast<int64_t>(i - 1)) < p);
    }
  }
  const std::optional<mploader::SampleLayout> layout = data.sample_layout();
  REQUIRE(layout->at(0).shape == std::vector<int64_t>{3, 32, 32});
  REQUIRE(layout->at(0).dtype == at::kFloat);
  REQUIRE(layout->at(1).dtype == at::kLong);
}

TEST_CASE("vision: ImageFolder refuses missing, empty and class-less folders by name") {
  Folder folder;
  REQUIRE_FOLDER(folder);
  REQUIRE_THROWS_WITH(ImageFolder(folder.root + "/missing", train_transform()),
                      Catch::Contains(folder.root + "/missing") &&
                          Catch::Contains("No such file"));
  REQUIRE_THROWS_WITH(ImageFolder(folder.root + "/ant/notes.txt", train_transform()),
                      Catch::Contains("is not a folder"));
  REQUIRE_THROWS_WITH(ImageFolder(folder.root + "/ant/nested", train_transform()),
                      Catch::Contains("holds no class folder"));
  fs::create_directory(folder.root + "/empty_class");
  REQUIRE_THROWS_WITH(ImageFolder(folder.root, train_transform()),
                      Catch::Contains(folder.root + "/empty_class") &&
                          Catch::Contains("holds no image"));
}

TEST_CASE("vision: ImageFolder's scan cache is read back until a folder changes") {
  Folder folder;
  REQUIRE_FOLDER(folder);
  ImageFolderOptions options;
  options.cache_file = folder.root + "/../" + fs::path(folder.root).filename().string() + ".list";
  const size_t first = ImageFolder(folder.root, train_transform(), options).size();
  REQUIRE(fs::exists(options.cache_file));
  // A cache naming one file fewer, with the folders' times unchanged, is what a second
  // construction lists: it read the cache, not the folders.
  std::ifstream in(options.cache_file);
  std::string text, line;
  bool dropped = false;
  while (std::getline(in, line)) {
    if (!dropped && line.rfind("file ", 0) == 0) {
      dropped = true;
      continue;
    }
    text += line + "\n";
  }
  std::ofstream(options.cache_file) << text;
  REQUIRE(ImageFolder(folder.root, train_transform(), options).size() == first - 1);
  // A new image changes its folder's time: the folders are scanned again.
  fs::copy_file(folder.root + "/cat/0.jpg", folder.root + "/cat/9.jpg");
  REQUIRE(ImageFolder(folder.root, train_transform(), options).size() == first + 1);
  fs::remove(options.cache_file);
}

TEST_CASE("vision: ImageFolder reads a list file and names a malformed line") {
  Folder folder;
  REQUIRE_FOLDER(folder);
  const std::string list = folder.root + "/list.txt";
  std::ofstream(list) << "# path label\ncat/0.jpg 1\n" << folder.root << "/dog/1.png 2\n\n";
  std::shared_ptr<ImageFolder> data = ImageFolder::from_list(list, train_transform());
  REQUIRE(data->size() == 2);
  REQUIRE(data->path(0) == folder.root + "/cat/0.jpg");
  REQUIRE(data->label(1) == 2);
  REQUIRE(data->classes() == std::vector<std::string>{"0", "1", "2"});
  std::ofstream(list) << "cat/0.jpg 1\ncat/2.png two\n";
  REQUIRE_THROWS_WITH(ImageFolder::from_list(list, train_transform()),
                      Catch::Contains("line 2") && Catch::Contains("cat/2.png two"));
}

TEST_CASE("vision: ImageFolder batches are bitwise the same with 0, 1 and 4 workers") {
  Folder folder;
  REQUIRE_FOLDER(folder);
  auto data = std::make_shared<ImageFolder>(folder.root, train_transform());
  const auto reference = load_epoch(data, options_with(0, mploader::StartMethod::kFork), 1);
  for (int workers : {1, 4}) {
    const auto other = load_epoch(data, options_with(workers, mploader::StartMethod::kFork), 1);
    INFO("num_workers = " << workers);
    REQUIRE(at::equal(reference.first, other.first));
    REQUIRE(at::equal(reference.second, other.second));
  }
  // Another epoch crops and flips anew.
  const auto next = load_epoch(data, options_with(0, mploader::StartMethod::kFork), 2);
  REQUIRE_FALSE(at::equal(reference.first, next.first));
}

TEST_CASE("vision: ImageFolder batches are bitwise the same with fork, spawn and forkserver") {
  Folder folder;
  REQUIRE_FOLDER(folder);
  auto data = std::make_shared<ImageFolder>(folder.root, train_transform());
  const auto reference = load_epoch(data, options_with(2, mploader::StartMethod::kFork), 3);
  for (auto method : {mploader::StartMethod::kSpawn, mploader::StartMethod::kForkserver}) {
    const auto other = load_epoch(data, options_with(2, method), 3);
    REQUIRE(at::equal(reference.first, other.first));
    REQUIRE(at::equal(reference.second, other.second));
  }
}

TEST_CASE("vision: ImageFolder's workers time decoding and transforms apart from reading") {
  Folder folder;
  REQUIRE_FOLDER(folder);
  auto data = std::make_shared<ImageFolder>(folder.root, train_transform());
  mploader::Loader loader(data, options_with(2, mploader::StartMethod::kFork));
  int64_t batches = 0;
  for (mploader::Batch& b : loader) batches += b.size() > 0 ? 1 : 0;
  REQUIRE(batches > 0);
  mploader::StageTimes stages;
  uint64_t busy = 0;
  for (const mploader::WorkerStats& w : loader.stats().workers) {
    stages += w.stages;
    busy += w.busy_ns;
  }
  CHECK(stages.decode_ns > 0);
  CHECK(stages.transform_ns > 0);
  CHECK(stages.read_ns > 0);  // opening and reading the files, and the header
  CHECK(stages.total_ns() == busy);
}

TEST_CASE("vision: ImageFolder batches after a mid-epoch resume are the ones not yet received") {
  Folder folder;
  REQUIRE_FOLDER(folder);
  auto data = std::make_shared<ImageFolder>(folder.root, train_transform());
  const mploader::LoaderOptions options = options_with(2, mploader::StartMethod::kFork);
  const auto whole = load_epoch(data, options, 0);
  std::string state;
  {
    mploader::Loader first(data, options);
    for (int b = 0; b < 2; ++b) REQUIRE(first.next());
    state = first.state_dict();
  }
  mploader::Loader resumed(data, options);
  resumed.load_state_dict(state);
  std::vector<at::Tensor> images;
  while (std::optional<mploader::Batch> b = resumed.next()) images.push_back((*b)["image"].clone());
  const at::Tensor rest = at::cat(images);
  REQUIRE(at::equal(rest, whole.first.slice(0, 2 * options.batch_size)));
}

TEST_CASE("vision: ImageFolder with kRaise fails the batch naming the file and the decoder") {
  Folder folder(/*bad=*/true);
  REQUIRE_FOLDER(folder);
  auto data = std::make_shared<ImageFolder>(folder.root, train_transform());
  mploader::LoaderOptions options = options_with(2, mploader::StartMethod::kFork);
  options.shuffle = false;
  mploader::Loader loader(data, options);
  try {
    for (mploader::Batch& b : loader) (void)b;
    FAIL("an epoch over corrupt files raised nothing");
  } catch (const mploader::WorkerError& e) {
    const std::string what = e.what();
    INFO(what);
    // The first bad file in index order: ant/1_text.jpg.
    REQUIRE(what.find(folder.root + "/ant/1_text.jpg") != std::string::npos);
    REQUIRE(what.find("not a JPEG or PNG") != std::string::npos);
    REQUIRE(what.find("on_bad_image") != std::string::npos);
  }
}

TEST_CASE("vision: ImageFolder with kSkip loads the next good file and lists every skip") {
  Folder folder(/*bad=*/true);
  REQUIRE_FOLDER(folder);
  ImageFolderOptions skip;
  skip.on_bad_image = OnBadImage::kSkip;
  auto data = std::make_shared<ImageFolder>(folder.root, train_transform(), skip);
  for (int workers : {0, 2}) {
    mploader::LoaderOptions options = options_with(workers, mploader::StartMethod::kFork);
    mploader::Loader loader(data, options);
    std::set<int64_t> labels;
    for (mploader::Batch& b : loader) {
      for (int64_t i = 0; i < b["label"].size(0); ++i) labels.insert(b["label"][i].item<int64_t>());
    }
    const mploader::LoaderStats stats = loader.stats();
    INFO("num_workers = " << workers);
    REQUIRE(stats.skipped_samples == 4);
    REQUIRE(stats.skipped.size() == 4);
    std::set<std::string> reasons;
    for (const mploader::SkippedSample& s : stats.skipped) {
      REQUIRE(data->path(s.index) == s.source);
      REQUIRE(s.substitute == (s.index + 1) % static_cast<int64_t>(data->size()));
      reasons.insert(s.source.substr(s.source.rfind('/') + 1) + ": " + s.reason);
    }
    const std::string all = Catch::Detail::stringify(reasons);
    INFO(all);
    REQUIRE(all.find("1_empty.jpg: the file is empty") != std::string::npos);
    REQUIRE(all.find("2_huge.png: the image is 100000 x 100000") != std::string::npos);
    REQUIRE(all.find("1_truncated.jpg") != std::string::npos);
    REQUIRE(all.find("1_text.jpg: not a JPEG or PNG") != std::string::npos);
  }
}

TEST_CASE("vision: ImageFolder names a file that vanished after the scan") {
  Folder folder;
  REQUIRE_FOLDER(folder);
  auto data = std::make_shared<ImageFolder>(folder.root, train_transform());
  fs::remove(data->path(3));
  mploader::LoaderOptions options = options_with(1, mploader::StartMethod::kFork);
  options.shuffle = false;
  mploader::Loader loader(data, options);
  REQUIRE_THROWS_WITH(
      [&] {
        for (mploader::Batch& b : loader) (void)b;
      }(),
      Catch::Contains(data->path(3)) && Catch::Contains("vanished after the folder was scanned"));
}

TEST_CASE("vision: ImageFolder names an image smaller than its CenterCrop") {
  Folder folder;
  REQUIRE_FOLDER(folder);
  auto data = std::make_shared<ImageFolder>(folder.root, Compose({CenterCrop(100)}));
  mploader::LoaderOptions options = options_with(0, mploader::StartMethod::kFork);
  options.shuffle = false;
  mploader::Loader loader(data, options);
  // ant/0 is 97 x 131 (make_image_folder.py): narrower than the crop.
  REQUIRE_THROWS_WITH(
      [&] {
        for (mploader::Batch& b : loader) (void)b;
      }(),
      Catch::Contains(folder.root + "/ant/0.") && Catch::Contains("CenterCrop"));
}

}  // namespace test_image_folder
