// A C++ dataset made from Python (mploader.vision.ImageFolder, mploader.TarShards, ...): the
// DataLoader runs it in the workers with no Python there. And what the bindings of the
// datasets' options share: keyword arguments read into an options struct by field name, an
// unknown one refused with the names there are.
#pragma once

#include "util/errors.h"

#include <mploader/dataset.h>
#include <mploader/errors.h>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <initializer_list>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace mploader::python {

namespace py = pybind11;

// An OptionError for option `name` of `who` whose value `value` is not one of `choices`.
[[noreturn]] void refuse_choice(const std::string& who, const char* name, const std::string& value,
                                const char* choices);
using mploader::detail::comma_list;  // "a, b, c", for messages that list names

// `value` as the enum value `choices` pairs it with ({"raise", OnBadImage::kRaise}, ...); an
// OptionError for `option` of `who`, listing the choices, for any other.
template <typename E>
E choice_named(const std::string& who, const char* option, const std::string& value,
               std::initializer_list<std::pair<const char*, E>> choices) {
  std::string names;
  for (const auto& [name, choice] : choices) {
    if (value == name) return choice;
    names += (names.empty() ? "'" : ", '") + std::string(name) + "'";
  }
  refuse_choice(who, option, value, names.c_str());
}

struct NativeDataset {
  std::shared_ptr<Dataset> dataset;
  std::string kind;  // "mploader.vision.ImageFolder", ... for repr() and messages
};

// The keyword arguments of one constructor: take() reads those it knows into fields,
// check_all_used() refuses the rest.
class Keywords {
 public:
  Keywords(py::kwargs kwargs, std::string who) : kwargs_(std::move(kwargs)), who_(std::move(who)) {}
  template <typename T>
  void take(const char* name, T& field) {
    known_.insert(name);
    if (!kwargs_.contains(name)) return;
    try {
      field = kwargs_[name].cast<T>();
    } catch (const py::cast_error&) {
      throw OptionError(name, "mploader: " + who_ + ": " + name + "=" +
                                  std::string(py::repr(kwargs_[name])) +
                                  " is not of the type it takes. Give what the documentation "
                                  "says (docs/python.md).");
    }
  }
  // Whether `name` was given (for options whose value is converted by hand).
  bool has(const char* name) {
    known_.insert(name);
    return kwargs_.contains(name);
  }
  py::object get(const char* name) { return kwargs_[name]; }
  // An enum option given by name: field = the value `choices` pairs the given string with.
  template <typename E>
  void choose(const char* name, E& field,
              std::initializer_list<std::pair<const char*, E>> choices) {
    if (has(name)) field = choice_named(who_, name, get(name).cast<std::string>(), choices);
  }
  // Throws OptionError naming the first keyword no take() or has() asked for.
  void check_all_used() const;

 private:
  py::kwargs kwargs_;
  std::string who_;
  std::set<std::string> known_;
};

// The class mploader._C.NativeDataset, the engine's own datasets (TokenStream, StreamMixture),
// and each built component's datasets (components/<name>/python/).
void bind_native_datasets(py::module_& m);

}  // namespace mploader::python
