/// @file
/// TensorDict: an ordered set of named tensors, and of named byte strings (text fields: an
/// utterance id, a transcript, a path, raw encoded bytes). A dataset returns one per sample; a
/// Batch holds the tensors of one batch. Order is kept so that the layout of a batch in shared
/// memory is stable.
///
/// Not safe for concurrent mutation; concurrent const access is fine.
#pragma once

#include <ATen/core/Tensor.h>

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mploader {

/// Named tensors, and named text fields, each in insertion order; a name is unique across both
/// (setting a tensor under a text field's name replaces the text field, and the other way
/// round). Iteration, size() and names() are the tensors; texts() the text fields. A text field
/// is a byte string: UTF-8 text or any bytes, NUL bytes included. See the file comment for
/// thread-safety.
class TensorDict {
 public:
  using Item = std::pair<std::string, at::Tensor>;  ///< A name and its tensor.
  using TextItem = std::pair<std::string, std::string>;  ///< A name and its bytes.

  TensorDict() = default;  ///< Empty.
  /// `{{"image", x}, {"label", y}}`; a repeated name keeps its last tensor.
  TensorDict(std::initializer_list<Item> items);

  /// Adds `name`, or replaces the tensor (or text field) already stored under it.
  void set(std::string name, at::Tensor tensor);
  /// Adds text field `name` (any bytes: UTF-8 text, a path, an encoded blob with NUL bytes), or
  /// replaces the text (or tensor) already stored under it. A batch hands it out as a
  /// std::string_view of shared memory (Batch::text).
  void set_text(std::string name, std::string value);
  /// set_text() with `size` raw bytes at `data`.
  void set_bytes(std::string name, const void* data, size_t size);
  /// Text field `name`; throws OptionError("name", ...) naming it and the text fields present.
  std::string_view text(std::string_view name) const;
  /// The text field called `name`, or nullptr.
  const std::string* find_text(std::string_view name) const;
  /// The text fields in insertion order.
  const std::vector<TextItem>& texts() const { return texts_; }
  /// Throws OptionError("name", ...) naming the missing key and the keys present.
  const at::Tensor& operator[](std::string_view name) const;
  /// The tensor called `name`, or nullptr.
  const at::Tensor* find(std::string_view name) const;
  /// Whether a tensor is called `name`.
  bool contains(std::string_view name) const { return find(name) != nullptr; }

  size_t size() const { return items_.size(); }   ///< Number of tensors (text fields apart).
  /// No tensor and no text field.
  bool empty() const { return items_.empty() && texts_.empty(); }
  /// The items in insertion order.
  std::vector<Item>::const_iterator begin() const { return items_.begin(); }
  std::vector<Item>::const_iterator end() const { return items_.end(); }  ///< End of the items.
  std::vector<std::string> names() const;  ///< The names in insertion order.

  /// The entries (tensors and text fields) whose names start with `prefix` and a '/', in
  /// order, with that start removed: nested names group tensors, so `batch.tensors().prefixed("audio")["features"]`
  /// is the batch's "audio/features". The tensors are shared, not copied; "audio/x/y" comes
  /// back as "x/y", and a trailing '/' on `prefix` is ignored. Empty when no name has it.
  TensorDict prefixed(std::string_view prefix) const;

 private:
  void erase_text(std::string_view name);
  void erase_tensor(std::string_view name);

  std::vector<Item> items_;
  std::vector<TextItem> texts_;
};

/// What Dataset::get returns.
using Sample = TensorDict;

}  // namespace mploader
