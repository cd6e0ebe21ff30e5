// The user's dataset libraries (--dataset-lib): loaded and checked by the library
// (core/plugin_library.h), passed on to spawned workers, and their datasets built.
#include "bench/plugin.h"

#include "bench/run_config.h"
#include "core/plugin_library.h"
#include "core/recipes.h"
#include "util/errors.h"

#include <mploader/dataset.h>
#include <mploader/registry.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>

namespace bench {
namespace {

// The libraries this bench loaded, as a newline-separated list of paths, for the workers that
// --start spawn and forkserver run: they are this program started again, with its environment.
constexpr const char* kInheritedLibs = "MPLOADER_BENCH_DATASET_LIBS";

std::map<std::string, DatasetPlugin>& loaded_plugins() {
  static std::map<std::string, DatasetPlugin> plugins;  // by path as given
  return plugins;
}

DatasetPlugin load(const std::string& path, bool pass_on) {
  auto found = loaded_plugins().find(path);
  if (found != loaded_plugins().end()) return found->second;
  mploader::detail::PluginLibrary library;
  try {
    library = mploader::detail::load_plugin_library(path, "--dataset-lib", "mploader-bench");
  } catch (const mploader::OptionError& e) {
    throw UsageError(e.what());
  }
  const DatasetPlugin plugin{path, library.datasets, library.collators};
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

std::string dataset_names(const DatasetPlugin& plugin) {
  return mploader::detail::comma_list(plugin.datasets);
}

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
  const auto factory = mploader::detail::find_dataset_factory(name);
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
