// Datasets from a shared library of the user's, for mploader-bench --dataset-lib. The library
// is built with mploader_add_dataset_plugin (cmake/mploaderPlugin.cmake): it registers its
// datasets with MPLOADER_REGISTER_DATASET and leaves mploader's code to this program, which
// exports it, so that there is one registry, and one copy of each worker-side variable.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace mploader {
class Dataset;
}

namespace bench {

struct DatasetPlugin {
  std::string path;                    // as given
  std::vector<std::string> datasets;   // the names it registered
  std::vector<std::string> collators;
};

// Loads the library at `path`, once per path, and keeps it loaded. Throws UsageError, naming
// the file and the fix, when it is missing, cannot be loaded, was built against another
// mploader, registers a name already taken, or registers no dataset. The path is passed on to
// the workers that --start spawn and forkserver start, which load it again.
DatasetPlugin load_dataset_plugin(const std::string& path);

// In a worker started by spawn or forkserver (this program run again): loads the libraries its
// parent loaded. Call before mploader::init().
void load_inherited_plugins();

// The names of the datasets `plugin` registers, as "a, b", for messages.
std::string dataset_names(const DatasetPlugin& plugin);

// Builds dataset `name` of `plugin` from `config`. Throws UsageError for a name the library
// does not register, and std::runtime_error, with the factory's message, when it throws or
// returns no dataset.
std::shared_ptr<mploader::Dataset> make_plugin_dataset(const DatasetPlugin& plugin,
                                                       const std::string& name,
                                                       const std::string& config);

}  // namespace bench
