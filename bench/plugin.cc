// Loading the user's dataset libraries (--dataset-lib) and building their datasets. The
// checks after dlopen() run in the order a user would fix things: the wrong kind of build
// first, then the names it registered.
#include "bench/plugin.h"

#include "bench/run_config.h"
#include "core/recipes.h"

#include <mploader/dataset.h>
#include <mploader/registry.h>

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>

namespace bench {
namespace {

// The libraries this bench loaded, as a newline-separated list of paths, for the workers that
// --start spawn and forkserver run: they are this program started again, with its environment.
constexpr const char* kInheritedLibs = "MPLOADER_BENCH_DATASET_LIBS";

const char* const kHowToBuild =
    "build it with mploader_add_dataset_plugin(NAME SOURCES...) from mploader's CMake package "
    "(docs/tuning-num-workers.md)";

std::map<std::string, DatasetPlugin>& loaded_plugins() {
  static std::map<std::string, DatasetPlugin> plugins;  // by path as given
  return plugins;
}

std::string comma_list(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

void check_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw UsageError("--dataset-lib: cannot open '" + path + "': " + std::strerror(errno) +
                     "; give the path of the shared library (.so) that registers your datasets, "
                     "e.g. --dataset-lib build/libmy_datasets.so");
  }
  if (!S_ISREG(st.st_mode)) {
    throw UsageError("--dataset-lib: '" + path + "' is not a file; give the shared library "
                     "(.so) that registers your datasets, e.g. build/libmy_datasets.so");
  }
}

void* open_library(const std::string& path) {
  // Without a slash dlopen() searches the library path, not the current folder.
  const std::string file = path.find('/') == std::string::npos ? "./" + path : path;
  ::dlerror();
  void* handle = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle != nullptr) return handle;
  const char* error = ::dlerror();
  const std::string why = error != nullptr ? error : "unknown error";
  const std::string fix =
      why.find("undefined symbol") != std::string::npos
          ? "it needs a symbol this mploader-bench " MPLOADER_BENCH_VERSION " does not have: "
            "build it against the mploader package this bench was installed with"
          : std::string("give a shared library built for this machine: ") + kHowToBuild;
  throw UsageError("--dataset-lib: cannot load '" + path + "': " + why + "; " + fix);
}

// A library that links mploader keeps its own registry and its own copy of what the workers
// set (the loading context, worker_info()): its datasets would register where this bench
// never looks, or read state no worker sets. dlsym() on the handle searches only the library
// and the libraries it needs, never this program. The symbol's name is this program's own
// (dladdr), so the check holds whatever the compiler's name mangling.
void check_no_own_copy(void* handle, const std::string& path) {
  Dl_info self{};
  if (::dladdr(reinterpret_cast<void*>(&mploader::register_dataset), &self) == 0 ||
      self.dli_sname == nullptr || ::dlsym(handle, self.dli_sname) == nullptr) {
    return;
  }
  throw UsageError("--dataset-lib: '" + path + "' holds a copy of mploader of its own (it "
                   "links mploader::mploader), whose registry and worker state this bench "
                   "never uses; " + kHowToBuild + ", which compiles against mploader's headers "
                   "and leaves its code to the bench");
}

void check_version(void* handle, const std::string& path) {
  const auto* built = static_cast<const char*>(::dlsym(handle, "mploader_plugin_version"));
  if (built == nullptr || std::strcmp(built, MPLOADER_BENCH_VERSION) == 0) return;
  throw UsageError("--dataset-lib: '" + path + "' was built against mploader " + built +
                   ", this mploader-bench is " MPLOADER_BENCH_VERSION ": the layouts of "
                   "mploader's types may differ; rebuild it against this bench's package");
}

void check_registrations(const mploader::detail::RegistrationCapture& capture,
                         const std::string& path) {
  if (!capture.duplicates.empty()) {
    throw UsageError("--dataset-lib: '" + path + "' registers " + comma_list(capture.duplicates) +
                     ", a name that mploader-bench or a library loaded before it registered "
                     "already; rename it in MPLOADER_REGISTER_DATASET (or _COLLATOR)");
  }
  if (capture.datasets.empty()) {
    throw UsageError("--dataset-lib: '" + path + "' registers no dataset; register each with "
                     "MPLOADER_REGISTER_DATASET(\"name\", factory) in a .cc file of the "
                     "library, and " + kHowToBuild);
  }
}

DatasetPlugin load(const std::string& path, bool pass_on) {
  auto found = loaded_plugins().find(path);
  if (found != loaded_plugins().end()) return found->second;
  check_file(path);
  DatasetPlugin plugin{path, {}, {}};
  void* handle = nullptr;
  {
    // The library's registrations run inside dlopen(); the capture keeps their names, and
    // their duplicates, which must not be thrown from there.
    mploader::detail::RegistrationCapture capture;
    handle = open_library(path);
    check_no_own_copy(handle, path);
    check_version(handle, path);
    check_registrations(capture, path);
    plugin.datasets = capture.datasets;
    plugin.collators = capture.collators;
  }
  // Never closed: the registry holds the library's factories from now on.
  loaded_plugins().emplace(path, plugin);
  if (!pass_on) return plugin;
  const char* before = std::getenv(kInheritedLibs);
  const std::string libs = before != nullptr && *before != '\0'
                               ? std::string(before) + "\n" + path : path;
  ::setenv(kInheritedLibs, libs.c_str(), 1);
  return plugin;
}

}  // namespace

DatasetPlugin load_dataset_plugin(const std::string& path) { return load(path, true); }

std::string dataset_names(const DatasetPlugin& plugin) { return comma_list(plugin.datasets); }

void load_inherited_plugins() {
  const char* libs = std::getenv(kInheritedLibs);
  if (libs == nullptr) return;
  std::istringstream paths(libs);
  for (std::string path; std::getline(paths, path);) {
    if (!path.empty()) load(path, false);
  }
}

std::shared_ptr<mploader::Dataset> make_plugin_dataset(const DatasetPlugin& plugin,
                                                       const std::string& name,
                                                       const std::string& config) {
  if (std::find(plugin.datasets.begin(), plugin.datasets.end(), name) ==
      plugin.datasets.end()) {
    throw UsageError("--dataset: '" + plugin.path + "' registers no dataset named '" + name +
                     "'; it registers: " + dataset_names(plugin));
  }
  const mploader::DatasetFactory factory = mploader::detail::find_dataset_factory(name);
  std::shared_ptr<mploader::Dataset> data;
  const std::string where = "dataset '" + name + "' of '" + plugin.path +
                            "' with --dataset-config '" + config + "'";
  try {
    data = factory(config);
  } catch (const std::exception& e) {
    throw std::runtime_error(where + ": its factory threw: " + e.what() +
                             "; fix the config, or the factory");
  }
  if (!data) {
    throw std::runtime_error(where + ": its factory returned no dataset (a null pointer); "
                             "return std::make_shared<YourDataset>(...)");
  }
  return data;
}

}  // namespace bench
