// Reading a recipe's JSON text (core/recipes.h) for the library's own dataset factories: the
// text is the library's, written by Dataset::recipe(), so one that does not read was changed
// or comes from another version of mploader, and the factory says so as an OptionError rather
// than letting the JSON library's own exception through.
#pragma once

#include "util/errors.h"

#include <mploader/errors.h>

#include <nlohmann/json.hpp>

#include <string>

namespace mploader::detail {

// Runs `read` (which parses the recipe of dataset factory `factory`) and returns what it
// returns; a text that does not parse, or lacks a field or holds one of another type, is an
// OptionError("config", ...) naming the factory and what the JSON library said.
template <typename Read>
auto read_recipe(const std::string& factory, Read&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const nlohmann::json::exception& e) {
    throw OptionError("config", message(factory,
                                        std::string("its recipe does not read (") + e.what() +
                                            ")",
                                        "Pass the recipe the dataset's recipe() gave, unchanged, "
                                        "to the same version of mploader"));
  }
}

}  // namespace mploader::detail
