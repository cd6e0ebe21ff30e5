// Batch's lookups by name (mploader/batch.h): a tensor, or a text field, each saying where the
// name is when it is the other kind.
#include <mploader/batch.h>

#include "core/exception_text.h"

#include <ATen/ATen.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace mploader {

const at::Tensor& Batch::operator[](std::string_view name) const {
  if (tensors_.find(name) == nullptr) {
    for (const auto& [text_name, column] : texts_) {
      if (text_name == name) {
        throw std::out_of_range("mploader: '" + std::string(name) +
                                "' is a text field of this batch, not a tensor: use "
                                "batch.text(\"" + std::string(name) + "\")");
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
  throw std::out_of_range("mploader: no text field named '" + std::string(name) + "'; " +
                          (tensors_.contains(name) ? "it is a tensor (use batch[name]); " : "") +
                          "this batch's text fields: " +
                          (have.empty() ? std::string("none") : detail::quoted_names(have)));
}

}  // namespace mploader
