// mploader.load_plugin() and mploader.registered_dataset(): the user's C++ datasets, built
// with mploader_add_dataset_plugin, in a library loaded at run time. Such a library holds no
// mploader of its own: it calls this module's (which links every object of the library and its
// components, and makes its symbols global before the first plugin is opened: Python loads
// extension modules with RTLD_LOCAL, where a later library could not see them).
#include "native_dataset.h"

#include "core/recipes.h"
#include "process/forkserver.h"

#include <mploader/registry.h>

#include <dlfcn.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace mploader::python {
namespace {

[[noreturn]] void refuse_plugin(const std::string& path, const std::string& what,
                                const std::string& fix) {
  throw OptionError("path", "mploader: load_plugin: '" + path + "' " + what + ". " + fix + ".");
}

const char* const kHowToBuild =
    "Build it with mploader_add_dataset_plugin(NAME SOURCES...) from mploader's CMake package "
    "(docs/tuning-num-workers.md)";

void make_this_module_global() {
  static const bool done = [] {
    Dl_info self{};
    if (::dladdr(reinterpret_cast<void*>(&make_this_module_global), &self) != 0) {
      ::dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
    }
    return true;
  }();
  (void)done;
}

void* open_plugin(const std::string& path) {
  const std::string file = path.find('/') == std::string::npos ? "./" + path : path;
  ::dlerror();
  void* handle = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle != nullptr) return handle;
  const char* error = ::dlerror();
  refuse_plugin(path, std::string("cannot be loaded: ") + (error ? error : "unknown error"),
                kHowToBuild + std::string(", against the mploader this package was built from"));
}

std::vector<std::string> load_plugin(const std::string& path) {
  // Loaded once: a second dlopen() returns the same library, whose registrations ran already.
  static std::map<std::string, std::vector<std::string>> loaded;  // guarded by the GIL
  if (auto found = loaded.find(path); found != loaded.end()) return found->second;
  make_this_module_global();
  detail::RegistrationCapture capture;  // the registrations run inside dlopen()
  void* handle = open_plugin(path);
  const auto* built = static_cast<const char*>(::dlsym(handle, "mploader_plugin_version"));
  if (built != nullptr && std::strcmp(built, MPLOADER_PY_VERSION) != 0) {
    refuse_plugin(path, std::string("was built against mploader ") + built +
                            ", and this package is " MPLOADER_PY_VERSION,
                  "Rebuild it against this mploader");
  }
  if (!capture.duplicates.empty()) {
    refuse_plugin(path, "registers " + comma_list(capture.duplicates) +
                            ", a name registered already",
                  "Rename it in MPLOADER_REGISTER_DATASET");
  }
  if (capture.datasets.empty()) {
    refuse_plugin(path, "registers no dataset (or holds a copy of mploader of its own)",
                  kHowToBuild + std::string(", with MPLOADER_REGISTER_DATASET in a .cc file"));
  }
  // The library stays loaded: the registry holds its factories.
  return loaded.emplace(path, capture.datasets).first->second;
}

NativeDataset registered_dataset(const std::string& name, const std::string& config) {
  DatasetFactory factory = detail::find_dataset_factory(name);
  if (!factory) {
    throw OptionError("name", "mploader: registered_dataset: no dataset is registered as '" +
                                  name + "'; registered: " + comma_list(registered_datasets()) +
                                  ". Load its library with mploader.load_plugin() first.");
  }
  py::gil_scoped_release unlocked;
  try {
    return {factory(config), name};
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {  // a factory's own complaint about its config
    throw OptionError("config", "mploader: registered_dataset('" + name + "'): " + e.what() +
                                    ". Fix the config given to it.");
  }
}

}  // namespace

void bind_plugins(py::module_& m) {
  m.def("load_plugin", &load_plugin, py::arg("path"));
  m.def("registered_dataset", &registered_dataset, py::arg("name"), py::arg("config"));
  m.def("registered_datasets", &registered_datasets);
  m.def("forkserver_started", &detail::forkserver_started,
        "Whether this process's forkserver runs (its workers know only the plugins loaded "
        "before it started).");
}

}  // namespace mploader::python
