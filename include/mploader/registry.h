// Factories that rebuild datasets and collators in a spawned worker, and mploader::init(),
// where a program run as a spawned worker becomes one.
//
//   MPLOADER_REGISTER_DATASET("fmnist", [](const std::string& dir) {
//     return std::make_shared<FashionMnist>(dir);
//   });
//   class FashionMnist : public mploader::Dataset {
//     std::optional<mploader::DatasetRecipe> recipe() const override { return {{"fmnist", dir_}}; }
//   };
//   int main(int argc, char** argv) { mploader::init(argc, argv); ... }
#pragma once

#include <mploader/collate.h>
#include <mploader/dataset.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mploader {

using DatasetFactory = std::function<std::shared_ptr<Dataset>(const std::string& config)>;
using CollatorFactory = std::function<std::shared_ptr<Collator>(const std::string& config)>;

// Registration is meant for static initialisation (the macros below); registering a name twice
// throws std::invalid_argument.
void register_dataset(const std::string& name, DatasetFactory factory);
void register_collator(const std::string& name, CollatorFactory factory);
std::vector<std::string> registered_datasets();

// Call first thing in main(). In a process started as a spawned worker it runs the worker and
// never returns; otherwise it records argv (spawned workers run the program with it again).
void init(int argc, char** argv);
// Whether init() was called in this process.
bool initialized();

}  // namespace mploader

#define MPLOADER_CONCAT_INNER(a, b) a##b
#define MPLOADER_CONCAT(a, b) MPLOADER_CONCAT_INNER(a, b)
// The factory is variadic so that a lambda with commas in its body needs no extra parentheses.
#define MPLOADER_REGISTER_DATASET(name, ...)                                             \
  static const bool MPLOADER_CONCAT(mploader_dataset_registered_, __LINE__) =            \
      (::mploader::register_dataset((name), (__VA_ARGS__)), true)
#define MPLOADER_REGISTER_COLLATOR(name, ...)                                            \
  static const bool MPLOADER_CONCAT(mploader_collator_registered_, __LINE__) =           \
      (::mploader::register_collator((name), (__VA_ARGS__)), true)
