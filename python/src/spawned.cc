// start_method spawn and forkserver for Python datasets. A spawned worker is a fresh Python,
// `python -c "import mploader._spawned"`, which becomes the worker through mploader::init();
// the engine then builds the dataset and the collator from their recipes, with the factories
// here: each payload is the pickled dataset (or collate_fn) and what multiprocessing's spawn
// needs to import the user's main module (mploader/_spawning.py).
#include "python_collate.h"
#include "python_dataset.h"

#include "core/recipes.h"

#include <mploader/registry.h>

#include <string>
#include <string_view>
#include <vector>

namespace mploader::python {
namespace {

// A spawned worker runs one Loader: its dataset and collator share one table of samples
// waiting for collate_fn. Never destroyed: it may outlive the interpreter.
const std::shared_ptr<PendingSamples>& spawned_pending() {
  static auto* pending = new std::shared_ptr<PendingSamples>(std::make_shared<PendingSamples>());
  return *pending;
}

std::shared_ptr<Dataset> python_dataset_from(std::string_view payload) {
  py::gil_scoped_acquire gil;
  try {
    // (fetch, size, whether samples wait for a collate_fn, worker start)
    // A view of the recipe's shared memory, not a copy: the payload can be as large as the
    // dataset. The worker keeps no recipe: it starts no workers of its own from this dataset.
    // The shared containers it holds find their memory among the descriptors handed over.
    py::list descriptors;
    for (int fd : detail::recipe_descriptors()) descriptors.append(fd);
    py::tuple made = py::module_::import("mploader._spawning")
                         .attr("rebuild_dataset")(py::memoryview::from_memory(payload.data(),
                                                                              payload.size()),
                                                  descriptors);
    auto dataset = std::make_shared<PythonDataset>(
        made[0], made[1].cast<size_t>(), made[2].cast<bool>() ? spawned_pending() : nullptr);
    if (!made[3].is_none()) dataset->start_with(made[3]);
    return dataset;
  } catch (py::error_already_set& e) {
    throw_foreign(e);
  }
}

std::shared_ptr<Collator> python_collator_from(const std::string& payload) {
  py::gil_scoped_acquire gil;
  try {
    py::object collate = py::module_::import("mploader._spawning")
                             .attr("rebuild_collate")(py::bytes(payload));
    auto collator = std::make_shared<PythonCollator>(std::move(collate), spawned_pending());
    collator->set_recipe(payload);
    return collator;
  } catch (py::error_already_set& e) {
    throw_foreign(e);
  }
}

const bool python_dataset_registered =
    (detail::register_dataset_view("mploader.python", python_dataset_from), true);
MPLOADER_REGISTER_COLLATOR("mploader.python_collate", python_collator_from);

}  // namespace

void init_with(const std::vector<std::string>& argv) {
  std::vector<std::string> copy = argv;
  std::vector<char*> args;
  for (std::string& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  // In a spawned worker this never returns; its loop takes the GIL for each call into Python.
  py::gil_scoped_release unlocked;
  mploader::init(static_cast<int>(copy.size()), args.data());
}

}  // namespace mploader::python
