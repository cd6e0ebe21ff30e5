#include "datasets/compose_recipes.h"

#include "core/recipe_json.h"
#include "core/recipes.h"
#include "util/errors.h"

#include <mploader/errors.h>

#include <mploader/registry.h>

#include <nlohmann/json.hpp>

#include <sstream>
#include <stdexcept>
#include <typeinfo>
#include <utility>

namespace mploader::detail {
namespace {

using nlohmann::json;

json recipe_json(const DatasetRecipe& recipe) {
  return json{{"factory", recipe.factory}, {"config", recipe.config}};
}

// Runs of consecutive indices as ranges, "0-9,15,20-29": a contiguous split stays short.
std::string encode_indices(const std::vector<int64_t>& indices) {
  std::string text;
  for (size_t i = 0; i < indices.size();) {
    size_t j = i;
    while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) ++j;
    if (!text.empty()) text += ',';
    text += std::to_string(indices[i]);
    if (j > i) text += '-' + std::to_string(indices[j]);
    i = j + 1;
  }
  return text;
}

[[noreturn]] void throw_bad_run(const std::string& run) {
  throw OptionError("config", message("mploader.subset", "a bad run of indices '" + run + "'",
                                      "Pass the recipe Subset::recipe() gives, unchanged"));
}

// One index of a run: all of `text` a number that fits int64 (std::stoll alone would read a
// prefix, and throw the standard library's own errors).
int64_t index_in_run(const std::string& text, const std::string& run) {
  size_t used = 0;
  int64_t value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::logic_error&) {  // std::stoll's invalid_argument and out_of_range
    throw_bad_run(run);
  }
  if (used != text.size()) throw_bad_run(run);
  return value;
}

std::vector<int64_t> decode_indices(const std::string& text) {
  std::vector<int64_t> indices;
  std::istringstream in(text);
  std::string run;
  while (std::getline(in, run, ',')) {
    const size_t dash = run.find('-', 1);
    const int64_t first = index_in_run(run.substr(0, dash), run);
    const int64_t last =
        dash == std::string::npos ? first : index_in_run(run.substr(dash + 1), run);
    if (last < first) throw_bad_run(run);
    for (int64_t i = first; i <= last; ++i) indices.push_back(i);
  }
  return indices;
}

std::optional<std::string> concat_text(const ConcatDataset& dataset) {
  json sources = json::array();
  for (const auto& source : dataset.sources()) {
    const std::optional<DatasetRecipe> recipe = source->recipe();
    if (!recipe) return std::nullopt;
    sources.push_back(recipe_json(*recipe));
  }
  return json{{"sources", sources}, {"source_field", dataset.source_field()}}.dump();
}

std::optional<std::string> subset_text(const Subset& dataset) {
  const std::optional<DatasetRecipe> recipe = dataset.source()->recipe();
  if (!recipe) return std::nullopt;
  return json{{"source", recipe_json(*recipe)}, {"indices", encode_indices(dataset.indices())}}
      .dump();
}

// A source's dataset, rebuilt by its own factory. Only the reading of the recipe's fields is
// ours: what the factory throws is its own, and passes through.
std::shared_ptr<Dataset> from_recipe(const json& recipe, const std::string& where) {
  const auto [name, config] = read_recipe(where, [&] {
    return std::pair{recipe.at("factory").get<std::string>(),
                     recipe.at("config").get<std::string>()};
  });
  const auto factory = find_dataset_factory(name);
  if (!factory) {
    throw OptionError("config", message("registry", "no dataset factory '" + name + "' (" +
                                                        where + ") is registered",
                                        "Register it with MPLOADER_REGISTER_DATASET in the "
                                        "program or in a library the workers load"));
  }
  return factory(config);
}

std::shared_ptr<Dataset> rebuild_concat(const std::string& config) {
  const auto [listed, source_field] = read_recipe("mploader.concat", [&] {
    const json text = json::parse(config);
    return std::pair{text.at("sources"), text.at("source_field").get<std::string>()};
  });
  std::vector<std::shared_ptr<Dataset>> sources;
  for (const json& source : listed) {
    sources.push_back(from_recipe(source, "source " + std::to_string(sources.size()) +
                                              " of a ConcatDataset"));
  }
  return std::make_shared<ConcatDataset>(std::move(sources), source_field);
}

const char* end_name(MixtureEnd end) {
  switch (end) {
    case MixtureEnd::kCycle: return "cycle";
    case MixtureEnd::kFirstExhausted: return "first_exhausted";
    case MixtureEnd::kAllExhausted: return "all_exhausted";
  }
  return "cycle";
}

MixtureEnd end_of(const std::string& name) {
  if (name == "first_exhausted") return MixtureEnd::kFirstExhausted;
  if (name == "all_exhausted") return MixtureEnd::kAllExhausted;
  if (name == "cycle") return MixtureEnd::kCycle;
  throw OptionError("config", message("mploader.stream_mixture", "an unknown end '" + name + "'",
                                      "Give cycle, first_exhausted or all_exhausted"));
}

std::optional<std::string> stream_mixture_text(const StreamMixture& dataset) {
  json sources = json::array();
  for (const auto& source : dataset.sources()) {
    const std::optional<DatasetRecipe> recipe = source->recipe();
    if (!recipe) return std::nullopt;
    sources.push_back(recipe_json(*recipe));
  }
  const StreamMixtureOptions& o = dataset.options();
  return json{{"sources", sources}, {"weights", o.weights}, {"end", end_name(o.end)},
              {"num_samples", o.num_samples}, {"source_field", o.source_field}}
      .dump();
}

std::shared_ptr<Dataset> rebuild_stream_mixture(const std::string& config) {
  json listed;
  StreamMixtureOptions o;
  read_recipe("mploader.stream_mixture", [&] {
    const json text = json::parse(config);
    listed = text.at("sources");
    o.weights = text.at("weights").get<std::vector<double>>();
    o.end = end_of(text.at("end").get<std::string>());
    o.num_samples = text.at("num_samples").get<int64_t>();
    o.source_field = text.at("source_field").get<std::string>();
  });
  std::vector<std::shared_ptr<StreamingDataset>> sources;
  for (const json& source : listed) {
    const std::string where =
        "source " + std::to_string(sources.size()) + " of a StreamMixture";
    auto stream = std::dynamic_pointer_cast<StreamingDataset>(from_recipe(source, where));
    if (!stream) {
      throw OptionError("config", message("mploader.stream_mixture",
                                          where + " is no longer a StreamingDataset",
                                          "Register a factory that rebuilds the "
                                          "StreamingDataset under that name"));
    }
    sources.push_back(std::move(stream));
  }
  return std::make_shared<StreamMixture>(std::move(sources), std::move(o));
}

std::shared_ptr<Dataset> rebuild_subset(const std::string& config) {
  const auto [source, indices] = read_recipe("mploader.subset", [&] {
    const json text = json::parse(config);
    return std::pair{text.at("source"), decode_indices(text.at("indices").get<std::string>())};
  });
  return std::make_shared<Subset>(from_recipe(source, "the source of a Subset"), indices);
}

std::optional<DatasetRecipe> checked(const char* factory, std::optional<std::string> text) {
  if (!text) return std::nullopt;
  return DatasetRecipe{factory, std::move(*text)};
}

std::string missing(const std::string& which, const Dataset& source) {
  std::string text = which + " (" + typeid(source).name() + ") has no recipe";
  if (std::optional<std::string> inner = composed_recipe_gap(source)) text += ": " + *inner;
  return text;
}

}  // namespace

std::optional<DatasetRecipe> concat_recipe(const ConcatDataset& dataset) {
  return checked("mploader.concat", concat_text(dataset));
}

std::optional<DatasetRecipe> subset_recipe(const Subset& dataset) {
  return checked("mploader.subset", subset_text(dataset));
}

std::optional<DatasetRecipe> stream_mixture_recipe(const StreamMixture& dataset) {
  return checked("mploader.stream_mixture", stream_mixture_text(dataset));
}

std::optional<std::string> composed_recipe_gap(const Dataset& dataset) {
  if (const auto* concat = dynamic_cast<const ConcatDataset*>(&dataset)) {
    for (size_t s = 0; s < concat->num_sources(); ++s) {
      const Dataset& source = *concat->sources()[s];
      if (!source.recipe()) {
        return missing("source " + std::to_string(s) + " of the ConcatDataset", source);
      }
    }
  } else if (const auto* mix = dynamic_cast<const StreamMixture*>(&dataset)) {
    for (size_t s = 0; s < mix->sources().size(); ++s) {
      const Dataset& source = *mix->sources()[s];
      if (!source.recipe()) {
        return missing("source " + std::to_string(s) + " of the StreamMixture", source);
      }
    }
  } else if (const auto* subset = dynamic_cast<const Subset*>(&dataset)) {
    if (!subset->source()->recipe()) return missing("the source of the Subset", *subset->source());
  }
  return std::nullopt;
}

}  // namespace mploader::detail

// In the file that the composed datasets' recipe() calls, so a static library keeps it.
MPLOADER_REGISTER_DATASET("mploader.concat", mploader::detail::rebuild_concat);
MPLOADER_REGISTER_DATASET("mploader.subset", mploader::detail::rebuild_subset);
MPLOADER_REGISTER_DATASET("mploader.stream_mixture", mploader::detail::rebuild_stream_mixture);
