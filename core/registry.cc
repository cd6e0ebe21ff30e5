// The registries of dataset and collator factories, and rebuilding a collator from its recipe.
#include <mploader/registry.h>

#include "core/recipes.h"
#include "util/errors.h"

#include <mploader/errors.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>

namespace mploader {
namespace {

template <class Factory>
struct Registry {
  std::mutex mutex;
  std::map<std::string, Factory> factories;
};

// Kept as views: a spawned worker's recipe is mapped shared memory, read without a copy by a
// factory that takes a view (detail::register_dataset_view); DatasetFactory gets a string.
Registry<detail::DatasetViewFactory>& datasets() {
  static Registry<detail::DatasetViewFactory> r;  // function-local: safe from static-init order
  return r;
}

Registry<CollatorFactory>& collators() {
  static Registry<CollatorFactory> r;
  return r;
}

// The open RegistrationCapture, if any. Registrations run at static initialisation, one
// library at a time on the thread that loads it, so one mutex guards it and both registries'
// additions (taken before a registry's own).
std::mutex capture_mutex;
detail::RegistrationCapture* open_capture = nullptr;  // GUARDED_BY(capture_mutex)

template <class Factory>
void add(Registry<Factory>& r, const std::string& kind, const std::string& name, Factory f) {
  std::lock_guard<std::mutex> capture_lock(capture_mutex);
  std::lock_guard<std::mutex> lock(r.mutex);
  const bool fresh = r.factories.emplace(name, std::move(f)).second;
  if (open_capture != nullptr) {
    if (!fresh) {
      open_capture->duplicates.push_back(kind + " '" + name + "'");
    } else {
      (kind == "dataset" ? open_capture->datasets : open_capture->collators).push_back(name);
    }
    return;
  }
  if (!fresh) {
    throw OptionError("name", detail::message("registry", "a " + kind + " factory named '" +
                                                              name + "' is registered twice",
                                              "Give one of them another name"));
  }
}

// "pad <value> <lengths suffix>", then "dims all", "sizes <suffix>", "multiple <n>" lines for
// the options away from their defaults (PadCollator::recipe in collate.cc). The suffix is the
// rest of the line, so one with spaces comes back whole; strtod reads "nan" and "inf", which
// the stream's operator>> does not.
PadOptions pad_options_from_recipe(const std::string& recipe) {
  std::istringstream lines(recipe);
  std::string line;
  std::getline(lines, line);
  const std::string rest = line.substr(4);
  const size_t space = rest.find(' ');
  const std::string value = rest.substr(0, space);
  char* end = nullptr;
  PadOptions o;
  o.pad_value = std::strtod(value.c_str(), &end);
  if (value.empty() || *end != '\0') {
    throw OptionError("collate", detail::message("pad recipe", "'" + line + "': '" + value +
                                                                   "' is not a number",
                                                 "Pass the recipe pad_collate()'s collator gives, unchanged"));
  }
  o.lengths_suffix = space == std::string::npos ? "" : rest.substr(space + 1);
  while (std::getline(lines, line)) {
    const size_t gap = line.find(' ');
    const std::string key = line.substr(0, gap);
    const std::string arg = gap == std::string::npos ? "" : line.substr(gap + 1);
    if (key == "dims" && arg == "all") {
      o.dims = PadDims::kAll;
    } else if (key == "sizes") {
      o.sizes_suffix = arg;
    } else if (key == "multiple" && !arg.empty() && arg.size() <= 18 &&
               arg.find_first_not_of("0123456789") == std::string::npos) {
      o.pad_to_multiple_of = std::stoll(arg);  // 18 digits: std::stoll cannot overflow
    } else {
      throw OptionError("collate", detail::message("pad recipe", "unknown line '" + line + "'",
                                                   "Pass the recipe pad_collate()'s collator "
                                                   "gives, unchanged"));
    }
  }
  return o;
}

}  // namespace

void register_dataset(const std::string& name, DatasetFactory factory) {
  add(datasets(), "dataset", name,
      detail::DatasetViewFactory([factory = std::move(factory)](std::string_view config) {
        return factory(std::string(config));
      }));
}

void register_collator(const std::string& name, CollatorFactory factory) {
  add(collators(), "collator", name, std::move(factory));
}

std::vector<std::string> registered_datasets() {
  std::lock_guard<std::mutex> lock(datasets().mutex);
  std::vector<std::string> names;
  for (const auto& entry : datasets().factories) names.push_back(entry.first);
  return names;
}

namespace detail {

RegistrationCapture::RegistrationCapture() {
  std::lock_guard<std::mutex> lock(capture_mutex);
  if (open_capture != nullptr) {
    throw Error(message("RegistrationCapture", "a RegistrationCapture is already open",
                        "Load one library at a time"));
  }
  open_capture = this;
}

RegistrationCapture::~RegistrationCapture() {
  std::lock_guard<std::mutex> lock(capture_mutex);
  open_capture = nullptr;
}

void register_dataset_view(const std::string& name, DatasetViewFactory factory) {
  add(datasets(), "dataset", name, std::move(factory));
}

std::optional<std::string> recipe_factory_of(const Dataset& dataset) {
  if (const auto* shared = dynamic_cast<const SharedRecipeSource*>(&dataset)) {
    if (!shared->recipe_config()) return std::nullopt;
    return shared->recipe_factory();
  }
  std::optional<DatasetRecipe> recipe = dataset.recipe();
  if (!recipe) return std::nullopt;
  return std::move(recipe->factory);
}

ipc::Result<std::optional<SharedRecipe>> shared_recipe_of(const Dataset& dataset) {
  if (const auto* shared = dynamic_cast<const SharedRecipeSource*>(&dataset)) {
    auto config = shared->recipe_config();
    if (!config) return std::optional<SharedRecipe>();
    return std::optional<SharedRecipe>(
        SharedRecipe{shared->recipe_factory(), std::move(config), shared->recipe_descriptors()});
  }
  std::optional<DatasetRecipe> recipe = dataset.recipe();
  if (!recipe) return std::optional<SharedRecipe>();
  SharedRecipe made{std::move(recipe->factory), nullptr, nullptr};
  if (!recipe->config.empty()) {
    auto sealed = ipc::SealedBytes::create(recipe->config, "mploader-dataset-recipe");
    if (!sealed.ok()) return sealed.error();
    made.config = sealed.take();
  }
  return std::optional<SharedRecipe>(std::move(made));
}

namespace {
std::vector<int> g_recipe_descriptors;  // one spawned worker builds one dataset, on one thread
}  // namespace

const std::vector<int>& recipe_descriptors() { return g_recipe_descriptors; }

void set_recipe_descriptors(std::vector<int> numbers) { g_recipe_descriptors = std::move(numbers); }

DatasetViewFactory find_dataset_factory(const std::string& name) {
  std::lock_guard<std::mutex> lock(datasets().mutex);
  auto it = datasets().factories.find(name);
  return it == datasets().factories.end() ? DatasetViewFactory() : it->second;
}

std::shared_ptr<Collator> collator_from_recipe(const std::string& recipe) {
  if (recipe == "stack") return stack_collate();
  if (recipe.rfind("pad ", 0) == 0) return pad_collate(pad_options_from_recipe(recipe));
  const size_t newline = recipe.find('\n');
  const std::string name = recipe.substr(0, newline);
  const std::string config = newline == std::string::npos ? "" : recipe.substr(newline + 1);
  CollatorFactory factory;
  {
    std::lock_guard<std::mutex> lock(collators().mutex);
    auto it = collators().factories.find(name);
    if (it != collators().factories.end()) factory = it->second;
  }
  if (!factory) {
    throw OptionError("collate", message("registry", "no collator factory named '" + name +
                                                         "' is registered",
                                         "Register it with MPLOADER_REGISTER_COLLATOR in the "
                                         "program or in a library the workers load"));
  }
  return factory(config);
}

}  // namespace detail
}  // namespace mploader
