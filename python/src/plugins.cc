// mploader.load_plugin() and mploader.registered_dataset(): the user's C++ datasets, built
// with mploader_add_dataset_plugin, in a library loaded at run time. Such a library holds no
// mploader of its own: it calls this module's (which links every object of the library and its
// components, and makes its symbols global before the first plugin is opened: Python loads
// extension modules with RTLD_LOCAL, where a later library could not see them).
#include "native_dataset.h"

#include "core/plugin_library.h"
#include "core/recipes.h"
#include "process/forkserver.h"

#include <mploader/registry.h>

#include <dlfcn.h>

#include <string>
#include <vector>

namespace mploader::python {
namespace {

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

std::vector<std::string> load_plugin(const std::string& path) {
  make_this_module_global();
  return detail::load_plugin_library(path, "load_plugin", "this mploader package").datasets;
}

NativeDataset registered_dataset(const std::string& name, const std::string& config) {
  const auto factory = detail::find_dataset_factory(name);
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
