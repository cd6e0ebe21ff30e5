// load_plugin_library (core/plugin_library.h): dlopen() inside a registration capture, then
// the checks on what it brought.
#include "core/plugin_library.h"

#include "core/recipes.h"
#include "util/errors.h"

#include <mploader/errors.h>
#include <mploader/registry.h>

#include <dlfcn.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

namespace mploader::detail {
namespace {

const char* const kHowToBuild =
    "Build it with mploader_add_dataset_plugin(NAME SOURCES...) from mploader's CMake package "
    "(docs/tuning-num-workers.md)";

struct Refusal {
  const std::string& flag;
  const std::string& path;
  [[noreturn]] void operator()(const std::string& what, const std::string& fix) const {
    throw OptionError("path", message(flag, "'" + path + "' " + what, fix));
  }
};

void check_file(const std::string& path, const Refusal& refuse) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw OptionError("path", message(refuse.flag, "cannot open '" + path + "': " +
                                                        std::strerror(errno),
                                      "Give the path of the shared library (.so) that registers "
                                      "your datasets, e.g. build/libmy_datasets.so"));
  }
  if (!S_ISREG(st.st_mode)) {
    refuse("is not a file", "Give the shared library (.so) that registers your datasets, e.g. "
                            "build/libmy_datasets.so");
  }
}

void* open_library(const std::string& path, const std::string& program, const Refusal& refuse) {
  // Without a slash dlopen() searches the library path, not the current folder.
  const std::string file = path.find('/') == std::string::npos ? "./" + path : path;
  ::dlerror();
  void* handle = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle != nullptr) return handle;
  const char* error = ::dlerror();
  const std::string why = error != nullptr ? error : "unknown error";
  refuse("cannot be loaded: " + why,
         why.find("undefined symbol") != std::string::npos
             ? "It needs a symbol that " + program + " (mploader " MPLOADER_LIBRARY_VERSION
               ") does not have: build it against the mploader " + program + " comes from"
             : std::string(kHowToBuild) + ", for this machine");
}

// A library that links mploader keeps its own registry and its own copy of what the workers
// set (the loading context, worker_info()): its datasets would register where the program
// never looks. dlsym() on the handle searches only the library and the libraries it needs;
// the symbol's name is this library's own (dladdr), whatever the compiler's name mangling.
void check_no_own_copy(void* handle, const std::string& program, const Refusal& refuse) {
  Dl_info self{};
  if (::dladdr(reinterpret_cast<void*>(&mploader::register_dataset), &self) == 0 ||
      self.dli_sname == nullptr || ::dlsym(handle, self.dli_sname) == nullptr) {
    return;
  }
  refuse("holds a copy of mploader of its own (it links mploader::mploader), whose registry "
         "and worker state " + program + " never uses",
         std::string(kHowToBuild) + ", which compiles against mploader's headers and leaves "
         "its code to " + program);
}

void check_version(void* handle, const std::string& program, const Refusal& refuse) {
  const auto* built = static_cast<const char*>(::dlsym(handle, "mploader_plugin_version"));
  if (built == nullptr || std::strcmp(built, MPLOADER_LIBRARY_VERSION) == 0) return;
  refuse(std::string("was built against mploader ") + built + ", and " + program +
             " is mploader " MPLOADER_LIBRARY_VERSION ": the layouts of mploader's types may "
             "differ",
         "Rebuild it against this mploader");
}

void check_registrations(const RegistrationCapture& capture, const std::string& program,
                         const Refusal& refuse) {
  if (!capture.duplicates.empty()) {
    refuse("registers " + comma_list(capture.duplicates) + ", a name that " + program +
               " or a library loaded before it registered already",
           "Rename it in MPLOADER_REGISTER_DATASET (or _COLLATOR)");
  }
  if (capture.datasets.empty()) {
    refuse("registers no dataset",
           "Register each with MPLOADER_REGISTER_DATASET(\"name\", factory) in a .cc file of "
           "the library. " + std::string(kHowToBuild));
  }
}

}  // namespace

PluginLibrary load_plugin_library(const std::string& path, const std::string& flag,
                                  const std::string& program) {
  static std::mutex mutex;
  static std::map<std::string, PluginLibrary> loaded;  // GUARDED_BY(mutex), by path as given
  std::lock_guard<std::mutex> lock(mutex);
  if (auto found = loaded.find(path); found != loaded.end()) return found->second;
  const Refusal refuse{flag, path};
  check_file(path, refuse);
  PluginLibrary library{path, {}, {}};
  {
    // The library's registrations run inside dlopen(); the capture keeps their names, and
    // their duplicates, which must not be thrown from there.
    RegistrationCapture capture;
    void* handle = open_library(path, program, refuse);
    check_no_own_copy(handle, program, refuse);
    check_version(handle, program, refuse);
    check_registrations(capture, program, refuse);
    library.datasets = capture.datasets;
    library.collators = capture.collators;
  }
  // Never closed: the registry holds the library's factories from now on.
  return loaded.emplace(path, library).first->second;
}

}  // namespace mploader::detail
