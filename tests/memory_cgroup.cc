#include "memory_cgroup.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace {

bool write_file(const std::string& file, const std::string& value) {
  std::ofstream out(file);
  out << value;
  out.flush();
  return static_cast<bool>(out);
}

std::string read_word(const std::string& file) {
  std::ifstream in(file);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return all;
}

// This process's cgroup path for the v2 hierarchy ("0::/x") or a v1 controller.
std::string own_cgroup(const std::string& controller) {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    const size_t a = line.find(':');
    const size_t b = line.find(':', a + 1);
    const std::string controllers = line.substr(a + 1, b - a - 1);
    if ((controller.empty() && controllers.empty() && line.compare(0, a, "0") == 0) ||
        (!controller.empty() && ("," + controllers + ",").find("," + controller + ",") !=
                                    std::string::npos)) {
      return line.substr(b + 1);
    }
  }
  return {};
}

// Mount point of the cgroup2 hierarchy or of the v1 `controller` hierarchy.
std::string mount_of(bool v2, const std::string& controller) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    std::string f[6];
    for (auto& w : f) s >> w;
    std::string word, type, source, options;
    while (s >> word && word != "-") {
    }
    s >> type >> source >> options;
    if (v2 && type == "cgroup2") return f[4];
    if (!v2 && type == "cgroup" &&
        ("," + options + ",").find("," + controller + ",") != std::string::npos) {
      return f[4];
    }
  }
  return {};
}

}  // namespace

MemoryCgroup::MemoryCgroup(long long limit_bytes) {
  if (geteuid() != 0) {
    why_ = "creating a memory cgroup needs root";
    return;
  }
  if (!try_v2(limit_bytes) && !try_v1(limit_bytes)) {
    why_ = "no writable memory cgroup (v2: " + why_ + ")";
  }
}

bool MemoryCgroup::try_v2(long long limit) {
  const std::string mount = mount_of(true, "");
  const std::string own = own_cgroup("");
  if (mount.empty() || own.empty()) return (why_ = "no cgroup2 mount"), false;
  const std::string parent = mount + (own == "/" ? "" : own);
  if (read_word(parent + "/cgroup.controllers").find("memory") == std::string::npos) {
    return (why_ = "the memory controller is not available in " + parent), false;
  }
  write_file(parent + "/cgroup.subtree_control", "+memory");
  const std::string dir = parent + "/mploader-test-" + std::to_string(getpid());
  if (mkdir(dir.c_str(), 0755) != 0 || !write_file(dir + "/memory.max", std::to_string(limit)) ||
      !write_file(dir + "/memory.swap.max", "0")) {
    rmdir(dir.c_str());
    return (why_ = std::string("cannot set memory.max under ") + parent), false;
  }
  path_ = dir;
  home_ = parent;
  version_ = "v2";
  return true;
}

bool MemoryCgroup::try_v1(long long limit) {
  const std::string mount = mount_of(false, "memory");
  const std::string own = own_cgroup("memory");
  if (mount.empty() || own.empty()) return false;
  const std::string parent = mount + (own == "/" ? "" : own);
  const std::string dir = parent + "/mploader-test-" + std::to_string(getpid());
  if (mkdir(dir.c_str(), 0755) != 0 ||
      !write_file(dir + "/memory.limit_in_bytes", std::to_string(limit))) {
    rmdir(dir.c_str());
    return false;
  }
  path_ = dir;
  home_ = parent;
  version_ = "v1";
  return true;
}

bool MemoryCgroup::enter() { return write_file(path_ + "/cgroup.procs", std::to_string(getpid())); }

bool MemoryCgroup::leave() { return write_file(home_ + "/cgroup.procs", std::to_string(getpid())); }

MemoryCgroup::~MemoryCgroup() {
  if (path_.empty()) return;
  leave();
  for (int i = 0; i < 50 && rmdir(path_.c_str()) != 0 && errno == EBUSY; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}
