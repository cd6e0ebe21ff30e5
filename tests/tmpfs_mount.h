// A small tmpfs mounted for one test, to make shared memory run out for real. Needs root (or
// CAP_SYS_ADMIN); without it ok() is false and why_not() says why, and the test skips.
#pragma once

#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

class TmpfsMount {
 public:
  explicit TmpfsMount(const std::string& size) {
    char dir[] = "/tmp/mploader-tmpfs-XXXXXX";
    if (mkdtemp(dir) == nullptr) {
      why_ = std::string("mkdtemp: ") + std::strerror(errno);
      return;
    }
    path_ = dir;
    if (geteuid() != 0) {
      why_ = "mounting a tmpfs needs root; run the tests as root to cover a full shm";
      return;
    }
    const std::string options = "size=" + size;
    if (mount("tmpfs", dir, "tmpfs", 0, options.c_str()) != 0) {
      why_ = std::string("mount -t tmpfs failed: ") + std::strerror(errno);
      return;
    }
    mounted_ = true;
  }
  ~TmpfsMount() {
    if (mounted_) umount2(path_.c_str(), MNT_DETACH);
    if (!path_.empty()) rmdir(path_.c_str());
  }
  bool ok() const { return mounted_; }
  const std::string& path() const { return path_; }
  const std::string& why_not() const { return why_; }

 private:
  std::string path_;
  std::string why_;
  bool mounted_ = false;
};
