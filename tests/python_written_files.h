// The files some tests compare against: written once per test process by a Python script of
// the project's (h5py's or pyarrow's writers), with that library's reads of them as the
// reference, and removed at exit by the process that made them. Also: whether this process
// holds a file open.
#pragma once

#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

namespace test_files {

// Runs `python script <folder> <rows>` into a fresh folder /tmp/<stem>-XXXXXX and returns the
// folder; "" when that fails, with `why` saying why (the script's output included).
inline std::string write_with_python(const std::string& stem, const std::string& python,
                                     const std::string& script, int64_t rows,
                                     const std::string& what, std::string& why) {
  std::string name = "/tmp/" + stem + "-XXXXXX";
  if (::mkdtemp(name.data()) == nullptr) {
    why = "cannot make a folder in /tmp";
    return std::string();
  }
  const std::string command = python + " " + script + " " + name + " " +
                              std::to_string(rows) + " > " + name + "/log 2>&1";
  if (std::system(command.c_str()) != 0) {
    std::ifstream log(name + "/log");
    why = python + " could not write " + what + " (scripts/install-deps installs it): " +
          std::string(std::istreambuf_iterator<char>(log), {});
    return std::string();
  }
  static const pid_t owner = ::getpid();
  static std::string remove;  // one folder per test process
  remove = "rm -rf " + name;
  std::atexit([] {
    if (::getpid() == owner) (void)std::system(remove.c_str());
  });
  return name;
}

// Whether this process holds a descriptor of `file`.
inline bool holds_descriptor(const std::string& file) {
  char resolved[PATH_MAX];
  if (::realpath(file.c_str(), resolved) == nullptr) return false;
  DIR* dir = ::opendir("/proc/self/fd");
  bool found = false;
  for (dirent* e = ::readdir(dir); e != nullptr && !found; e = ::readdir(dir)) {
    char target[PATH_MAX] = {};
    const std::string link = std::string("/proc/self/fd/") + e->d_name;
    if (::readlink(link.c_str(), target, sizeof target - 1) > 0) {
      found = resolved == std::string(target);
    }
  }
  ::closedir(dir);
  return found;
}

}  // namespace test_files
