// ImageFolder's listing against hostile trees and list files: symbolic link loops and a label
// that is a typo.
#include "image_folder_test_support.h"

#include <mploader/errors.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>
#include <thread>

namespace test_folder_scan {

namespace fs = std::filesystem;
using namespace mploader::vision;
using vision_test::ScratchDir;

namespace {

Compose small() { return Compose({CenterCrop(8)}); }

// How many images ImageFolder lists under `root`, scanned in a child process so that a runaway
// scan can be stopped: -1 when it was still running after `seconds`, -2 when it threw.
int scan_size_within(const std::string& root, int seconds) {
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    try {
      _exit(static_cast<int>(std::min<size_t>(ImageFolder(root, small()).size(), 250)));
    } catch (...) {
      _exit(255);
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  int status = 0;
  while (waitpid(child, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) == 255) return -2;
  return WEXITSTATUS(status);
}

}  // namespace

TEST_CASE("vision: a symbolic link to its own folder lists each image once") {
  ScratchDir dir;
  vision_test::make_classes(dir.path, {"cat", "dog"}, 2);
  fs::create_directory_symlink(".", dir.path + "/cat/self");
  // A link to a folder outside the tree is followed, as torchvision follows it.
  ScratchDir extra;
  vision_test::make_classes(extra.path, {"more"}, 1);
  fs::create_directory_symlink(extra.path + "/more", dir.path + "/dog/more");
  ImageFolder data(dir.path, small());
  std::set<std::string> paths;
  for (size_t i = 0; i < data.size(); ++i) paths.insert(data.path(static_cast<int64_t>(i)));
  INFO(data.size() << " images listed");
  REQUIRE(data.size() == 5);
  REQUIRE(paths.size() == 5);
  REQUIRE(paths.count(dir.path + "/dog/more/0.jpg") == 1);
  // Two class names for one folder would give its images two labels.
  fs::create_directory_symlink("cat", dir.path + "/kitten");
  REQUIRE_THROWS_WITH(ImageFolder(dir.path, small()),
                      Catch::Contains(dir.path + "/kitten") && Catch::Contains(dir.path + "/cat") &&
                          Catch::Contains("same folder"));
}

TEST_CASE("vision: two symbolic links to their own folder do not make the scan exponential") {
  ScratchDir dir;
  vision_test::make_classes(dir.path, {"cat", "dog"}, 2);
  fs::create_directory_symlink(".", dir.path + "/cat/a");
  fs::create_directory_symlink(".", dir.path + "/cat/b");
  fs::create_directory_symlink("..", dir.path + "/dog/up");  // the root, from inside a class
  fs::create_directory_symlink("../cat", dir.path + "/dog/cats");
  // Each folder once, in its own class: cat's images are not listed under dog again.
  REQUIRE(scan_size_within(dir.path, 30) == 4);
}

TEST_CASE("vision: a list file's label far beyond its number of images names the line") {
  ScratchDir dir;
  vision_test::make_classes(dir.path, {"cat"}, 2);
  const std::string list = dir.path + "/list.txt";
  std::ofstream(list) << "cat/0.jpg 0\n/x/img.jpg 123456789012\ncat/1.jpg 1\n";
  REQUIRE_THROWS_AS(ImageFolder::from_list(list, small()), mploader::OptionError);
  REQUIRE_THROWS_WITH(ImageFolder::from_list(list, small()),
                      Catch::Contains("line 2") && Catch::Contains(list) &&
                          Catch::Contains("123456789012"));
  // Labels need not be dense: a few images of many classes is a subset, not a typo.
  std::ofstream(list) << "cat/0.jpg 999\ncat/1.jpg 3\n";
  REQUIRE(ImageFolder::from_list(list, small())->classes().size() == 1000);
}

}  // namespace test_folder_scan
