// A memory cgroup with a low limit, for one test, to make the kernel's OOM killer act for real.
// cgroup v2 where the memory controller can be enabled below our own cgroup, else cgroup v1.
// Needs root; without it, or without either hierarchy, ok() is false and why_not() says why.
//
// enter() moves the calling process in (children forked then start inside), leave() moves it
// back; the directory is removed when the object is destroyed and its processes are gone.
#pragma once

#include <string>

class MemoryCgroup {
 public:
  explicit MemoryCgroup(long long limit_bytes);
  ~MemoryCgroup();
  bool ok() const { return !path_.empty(); }
  const std::string& why_not() const { return why_; }
  const std::string& path() const { return path_; }
  const std::string& version() const { return version_; }
  bool enter();
  bool leave();

 private:
  bool try_v2(long long limit_bytes);
  bool try_v1(long long limit_bytes);

  std::string path_;
  std::string home_;  // where this process was, to go back
  std::string version_;
  std::string why_;
};
