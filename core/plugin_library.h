// core/: the user's dataset libraries (built with mploader_add_dataset_plugin), loaded at run
// time by mploader-bench and mploader-pack (--dataset-lib) and by the Python package
// (mploader.load_plugin): one set of checks, in the order a user would fix things: the file,
// loading it, a copy of mploader of its own, the version it was built against, the names it
// registers.
#pragma once

#include <string>
#include <vector>

namespace mploader::detail {

struct PluginLibrary {
  std::string path;                   // as given
  std::vector<std::string> datasets;  // the names it registered, in order
  std::vector<std::string> collators;
};

// Loads the library at `path`, once per process (again: the first load's names), and keeps it
// loaded: the registry holds its factories. `flag` is how the user named it ("--dataset-lib",
// "load_plugin") and `program` what loads it ("mploader-bench"), for the messages. Throws
// OptionError("path") saying what is wrong and the fix: a missing file or one that is not a
// file, one that cannot be loaded, holds a copy of mploader of its own, was built against
// another mploader version, registers a name already taken, or registers no dataset. The
// program must provide mploader's symbols (linked whole and exported).
PluginLibrary load_plugin_library(const std::string& path, const std::string& flag,
                                  const std::string& program);

}  // namespace mploader::detail
