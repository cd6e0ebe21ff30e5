// The files some tests compare against: written once per test process by a Python script of
// the project's (h5py's or pyarrow's writers), with that library's reads of them as the
// reference, and removed at exit by the process that made them. Also: whether this process
// holds a file open.
#pragma once

#include <mploader/npy.h>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <mutex>
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

// One component's reference files: written by `script` at the first call of folder(), once per
// test process, with the reference library's reads of them beside them as <file>.<field>.npy
// (numbers) and <file>.<field>.json (texts, bytes, lists).
class PythonWrittenFiles {
 public:
  PythonWrittenFiles(std::string stem, std::string python, std::string script, int64_t rows,
                     std::string what)
      : stem_(std::move(stem)), python_(std::move(python)), script_(std::move(script)),
        rows_(rows), what_(std::move(what)) {}

  // The folder holding the files, or "" when they could not be written (why() says why).
  const std::string& folder() const {
    std::call_once(written_, [this] {
      folder_ = write_with_python(stem_, python_, script_, rows_, what_, why_);
    });
    return folder_;
  }
  const std::string& why() const { return why_; }
  std::string path(const std::string& name) const { return folder() + "/" + name; }
  at::Tensor npy(const std::string& file, const std::string& field) const {
    return mploader::NpyArray(path(file + "." + field + ".npy")).tensor();
  }
  nlohmann::json json(const std::string& file, const std::string& field) const {
    std::ifstream in(path(file + "." + field + ".json"));
    return nlohmann::json::parse(in);
  }

 private:
  std::string stem_, python_, script_;
  int64_t rows_;
  std::string what_;
  mutable std::once_flag written_;
  mutable std::string folder_, why_;
};

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

// Returns from the test, as skipped, when the Python library could not write `files`.
#define TEST_NEEDS_PYTHON_FILES(files)             \
  do {                                             \
    if ((files).folder().empty()) {                \
      WARN("skipped: " << (files).why());          \
      return;                                      \
    }                                              \
  } while (0)
