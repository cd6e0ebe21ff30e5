/// @file
/// Factories that rebuild datasets and collators in a spawned worker, and mploader::init(),
/// where a program run as a spawned worker becomes one.
///
///   MPLOADER_REGISTER_DATASET("fmnist", [](const std::string& dir) {
///     return std::make_shared<FashionMnist>(dir);
///   });
///   class FashionMnist : public mploader::Dataset {
///     std::optional<mploader::DatasetRecipe> recipe() const override { return {{"fmnist", dir_}}; }
///   };
///   int main(int argc, char** argv) { mploader::init(argc, argv); ... }
#pragma once

#include <mploader/collate.h>
#include <mploader/dataset.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mploader {

/// Builds a dataset in a spawned worker from DatasetRecipe::config.
using DatasetFactory = std::function<std::shared_ptr<Dataset>(const std::string& config)>;
/// Builds a collator in a spawned worker from the config part of Collator::recipe().
using CollatorFactory = std::function<std::shared_ptr<Collator>(const std::string& config)>;

/// Registers the factory DatasetRecipe::factory names. Meant for static initialisation (the
/// macros below), before main() and before any Loader; registering a name twice throws
/// OptionError("name", ...).
void register_dataset(const std::string& name, DatasetFactory factory);
/// The same for collators (MPLOADER_REGISTER_COLLATOR).
void register_collator(const std::string& name, CollatorFactory factory);
/// The names registered so far, for error messages and checks.
std::vector<std::string> registered_datasets();

/// Call first thing in main(). In a process started as a spawned worker it runs the worker and
/// never returns; otherwise it records argv (spawned workers run the program with it again).
void init(int argc, char** argv);
/// Whether init() was called in this process.
bool initialized();

}  // namespace mploader

#define MPLOADER_CONCAT_INNER(a, b) a##b
#define MPLOADER_CONCAT(a, b) MPLOADER_CONCAT_INNER(a, b)
/// Registers a DatasetFactory under `name` at static initialisation, at namespace scope in a
/// .cc file linked into the program. The factory is variadic so that a lambda with commas in
/// its body needs no extra parentheses.
#define MPLOADER_REGISTER_DATASET(name, ...)                                             \
  static const bool MPLOADER_CONCAT(mploader_dataset_registered_, __LINE__) =            \
      (::mploader::register_dataset((name), (__VA_ARGS__)), true)
/// Registers a CollatorFactory under `name`, like MPLOADER_REGISTER_DATASET.
#define MPLOADER_REGISTER_COLLATOR(name, ...)                                            \
  static const bool MPLOADER_CONCAT(mploader_collator_registered_, __LINE__) =           \
      (::mploader::register_collator((name), (__VA_ARGS__)), true)
