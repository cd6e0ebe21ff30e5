// Rebuilding a dataset and a collator from their recipes, in a worker that did not inherit them
// (spawn, forkserver). The texts are written by Dataset::recipe() and Collator::recipe()
// (core/collate.cc) and read here, in the same folder.
#pragma once

#include <mploader/collate.h>
#include <mploader/registry.h>

#include <memory>
#include <string>

namespace mploader::detail {

// An empty function for a name no one registered.
DatasetFactory find_dataset_factory(const std::string& name);
// Throws std::invalid_argument for an unknown recipe.
std::shared_ptr<Collator> collator_from_recipe(const std::string& recipe);

}  // namespace mploader::detail
