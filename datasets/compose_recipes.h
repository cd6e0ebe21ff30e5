// The spawn recipes of ConcatDataset and Subset (JSON texts of their sources' recipes), the
// factories that rebuild them ("mploader.concat", "mploader.subset"), and the text that says
// which source keeps a composed dataset from having a recipe.
#pragma once

#include <mploader/compose.h>
#include <mploader/stream_mixture.h>

#include <cstddef>
#include <optional>
#include <string>

namespace mploader::detail {

std::optional<DatasetRecipe> concat_recipe(const ConcatDataset& dataset);
std::optional<DatasetRecipe> subset_recipe(const Subset& dataset);
std::optional<DatasetRecipe> stream_mixture_recipe(const StreamMixture& dataset);

// Why `dataset` has no recipe when it is a ConcatDataset or a Subset (naming the source that
// has none); nullopt for any other dataset, or one that has a recipe.
std::optional<std::string> composed_recipe_gap(const Dataset& dataset);

}  // namespace mploader::detail
