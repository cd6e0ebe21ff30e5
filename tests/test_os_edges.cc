// The operating system's edge cases around workers: a process that dataset code starts
// inherits none of mploader's descriptors.
#include "crash_test_support.h"

#include <mploader/registry.h>

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <thread>

extern char** environ;

using namespace mploader;
using namespace crash_testing;
using testing_datasets::CountingDataset;

namespace {

// Starts `sleep 30` (fork + exec, by posix_spawn) from the first sample each worker loads, as
// dataset code calling a decoder or a shell would; "grandchild" holds its pid (0 otherwise).
class GrandchildDataset : public CountingDataset {
 public:
  using CountingDataset::CountingDataset;
  Sample get(int64_t index) override {
    Sample s = CountingDataset::get(index);
    int64_t pid = 0;
    if (worker_info() && !started_) {  // not in the main process's probe of sample 0
      started_ = true;
      pid = start_sleep();
    }
    s.set("grandchild", at::scalar_tensor(pid, at::kLong));
    return s;
  }
  std::optional<DatasetRecipe> recipe() const override {
    return DatasetRecipe{"grandchild", std::to_string(size())};
  }

 private:
  static int64_t start_sleep() {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    for (int fd = 0; fd < 3; ++fd) {
      posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", O_RDWR, 0);
    }
    char arg0[] = "sleep", arg1[] = "30";
    char* argv[] = {arg0, arg1, nullptr};
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, "/bin/sleep", &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    return rc == 0 ? pid : -rc;
  }
  bool started_ = false;
};

MPLOADER_REGISTER_DATASET("grandchild", [](const std::string& config) {
  return std::make_shared<GrandchildDataset>(std::stoul(config));
});

// The targets of /proc/<pid>/fd/*: "socket:[123]", "anon_inode:[eventfd]", "/memfd:x", ...
std::vector<std::string> fd_targets(int pid) {
  std::vector<std::string> out;
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd/";
  for (int fd = 0; fd < 4096; ++fd) {
    char target[512];
    const ssize_t n = readlink((dir + std::to_string(fd)).c_str(), target, sizeof target - 1);
    if (n > 0) out.push_back(std::to_string(fd) + " -> " + std::string(target, n));
  }
  return out;
}

bool is_mploader_kind(const std::string& link) {
  for (const char* kind : {"memfd:", "anon_inode:[eventfd]", "socket:", "anon_inode:[pidfd]",
                           "anon_inode:[signalfd]"}) {
    if (link.find(kind) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("inherited fds: a process that dataset code starts holds none of mploader's",
          "[lifecycle][process][fds]") {
  for (StartMethod method : {StartMethod::kFork, StartMethod::kSpawn, StartMethod::kForkserver}) {
    INFO("start method " << static_cast<int>(method));
    LoaderOptions o;
    o.num_workers = 2;
    o.batch_size = 4;
    o.start_method = method;
    Loader loader(std::make_shared<GrandchildDataset>(32), o);
    std::vector<int64_t> grandchildren;
    for (Batch& b : loader) {
      auto pids = b["grandchild"];
      for (int64_t i = 0; i < pids.size(0); ++i) {
        if (pids[i].item<int64_t>() != 0) grandchildren.push_back(pids[i].item<int64_t>());
      }
    }
    REQUIRE(grandchildren.size() == 2);
    for (int64_t pid : grandchildren) {
      REQUIRE(pid > 0);
      const std::vector<std::string> links = fd_targets(static_cast<int>(pid));
      for (const std::string& link : links) {
        INFO("grandchild " << pid << " holds " << link);
        CHECK_FALSE(is_mploader_kind(link));
      }
      kill(static_cast<pid_t>(pid), SIGKILL);
    }
  }
}
