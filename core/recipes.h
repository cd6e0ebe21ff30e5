// Rebuilding a dataset and a collator from their recipes, in a worker that did not inherit them
// (spawn, forkserver). The texts are written by Dataset::recipe() and Collator::recipe()
// (core/collate.cc) and read here, in the same folder.
#pragma once

#include <mploader/collate.h>
#include <mploader/registry.h>

#include <memory>
#include <string>
#include <vector>

namespace mploader::detail {

// An empty function for a name no one registered.
DatasetFactory find_dataset_factory(const std::string& name);
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
