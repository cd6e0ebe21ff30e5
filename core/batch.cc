// Batch's lookups by name (mploader/batch.h): a tensor, or a text field, each saying where the
// name is when it is the other kind.
#include <mploader/batch.h>

#include "core/exception_text.h"
#include "util/errors.h"

#include <mploader/errors.h>

#include <ATen/ATen.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace mploader {

const at::Tensor& Batch::operator[](std::string_view name) const {
  if (tensors_.find(name) == nullptr) {
    for (const auto& [text_name, column] : texts_) {
      if (text_name == name) {
        throw OptionError("name", detail::message("Batch", "'" + std::string(name) +
                                                               "' is a text field of this "
                                                               "batch, not a tensor",
                                                  "Use batch.text(\"" + std::string(name) +
                                                      "\")"));
      }
    }
  }
  return tensors_[name];
}

const TextColumn& Batch::text(std::string_view name) const {
  for (const auto& [text_name, column] : texts_) {
    if (text_name == name) return column;
  }
  std::vector<std::string> have;
  for (const auto& item : texts_) have.push_back(item.first);
  throw OptionError("name", detail::message("Batch",
                                            "no text field named '" + std::string(name) + "'" +
                                                (tensors_.contains(name) ? " (it is a tensor)"
                                                                         : "") +
                                                "; this batch's text fields: " +
                                                detail::quoted_names(have),
                                            tensors_.contains(name)
                                                ? "Use batch[name] for a tensor"
                                                : "Ask for one of its text fields"));
}

}  // namespace mploader
