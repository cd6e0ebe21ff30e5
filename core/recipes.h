// Rebuilding a dataset and a collator from their recipes, in a worker that did not inherit them
// (spawn, forkserver). The texts are written by Dataset::recipe() and Collator::recipe()
// (core/collate.cc) and read here, in the same folder.
#pragma once

#include "ipc/sealed_bytes.h"
#include "ipc/status.h"

#include <mploader/collate.h>
#include <mploader/registry.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mploader::detail {

// A dataset factory that reads its config where it lies, without a copy: what the registry
// keeps for every name (register_dataset's factories get a std::string made from the view).
using DatasetViewFactory = std::function<std::shared_ptr<Dataset>(std::string_view config)>;
// For a factory whose config can be as large as its dataset (a pickled Python one).
void register_dataset_view(const std::string& name, DatasetViewFactory factory);
// A dataset whose recipe's config already lies in sealed shared memory (a Python dataset is
// pickled straight into it): the loader hands that memory to spawned workers as it is, where
// recipe() would copy it, and takes the factory's name from here.
class SharedRecipeSource {
 public:
  virtual std::string recipe_factory() const = 0;
  // Null when the dataset has no recipe.
  virtual std::shared_ptr<const ipc::SealedBytes> recipe_config() const = 0;
  // Descriptors the config refers to, handed to each spawned worker beside it (a Python
  // dataset's shared containers); null: none.
  virtual std::shared_ptr<const std::vector<ipc::UniqueFd>> recipe_descriptors() const {
    return nullptr;
  }

 protected:
  ~SharedRecipeSource() = default;
};

// The factory a spawned worker rebuilds `dataset` with, nullopt when it has no recipe: from a
// SharedRecipeSource without copying its config, otherwise from recipe().
std::optional<std::string> recipe_factory_of(const Dataset& dataset);
// `dataset`'s recipe as spawned workers map it: its factory, and its config in sealed shared
// memory (the dataset's own, or made here from recipe(); null when empty). nullopt when it has
// no recipe; an ipc error making the memory is the caller's to report.
struct SharedRecipe {
  std::string factory;
  std::shared_ptr<const ipc::SealedBytes> config;
  std::shared_ptr<const std::vector<ipc::UniqueFd>> descriptors;  // SharedRecipeSource's
};

// In a spawned worker, while its dataset factory runs: the numbers of the descriptors handed to
// it beside the recipe (SharedRecipeSource::recipe_descriptors), in order; empty elsewhere.
// The worker closes them once the dataset is built: a factory keeps its own copies.
const std::vector<int>& recipe_descriptors();
void set_recipe_descriptors(std::vector<int> numbers);
ipc::Result<std::optional<SharedRecipe>> shared_recipe_of(const Dataset& dataset);

// An empty function for a name no one registered.
DatasetViewFactory find_dataset_factory(const std::string& name);
// Throws OptionError("collate", ...) for an unknown recipe.
std::shared_ptr<Collator> collator_from_recipe(const std::string& recipe);

// Records what registers while it lives, for a program that loads a library of datasets
// (mploader-bench --dataset-lib). The library's registrations run inside dlopen(), which an
// exception must not cross (the dynamic loader would be left locked), so while a capture is
// open a name registered twice is recorded in `duplicates` instead of thrown. One at a time.
class RegistrationCapture {
 public:
  RegistrationCapture();
  ~RegistrationCapture();
  RegistrationCapture(const RegistrationCapture&) = delete;
  RegistrationCapture& operator=(const RegistrationCapture&) = delete;

  std::vector<std::string> datasets;    // registered while open, in order
  std::vector<std::string> collators;
  std::vector<std::string> duplicates;  // "dataset 'name'" or "collator 'name'", kept first
};

}  // namespace mploader::detail
