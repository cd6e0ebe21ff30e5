/// @file
/// TensorDict: an ordered set of named tensors. A dataset returns one per sample; a Batch holds
/// one per batch. Order is kept so that the layout of a batch in shared memory is stable.
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

/// Named tensors in insertion order; names are unique. See the file comment for thread-safety.
class TensorDict {
 public:
  using Item = std::pair<std::string, at::Tensor>;  ///< A name and its tensor.

  TensorDict() = default;  ///< Empty.
  /// `{{"image", x}, {"label", y}}`; a repeated name keeps its last tensor.
  TensorDict(std::initializer_list<Item> items);

  /// Adds `name`, or replaces the tensor already stored under it.
  void set(std::string name, at::Tensor tensor);
  /// Throws std::out_of_range naming the missing key and the keys present.
  const at::Tensor& operator[](std::string_view name) const;
  /// The tensor called `name`, or nullptr.
  const at::Tensor* find(std::string_view name) const;
  /// Whether a tensor is called `name`.
  bool contains(std::string_view name) const { return find(name) != nullptr; }

  size_t size() const { return items_.size(); }   ///< Number of tensors.
  bool empty() const { return items_.empty(); }   ///< No tensor at all.
  /// The items in insertion order.
  std::vector<Item>::const_iterator begin() const { return items_.begin(); }
  std::vector<Item>::const_iterator end() const { return items_.end(); }  ///< End of the items.
  std::vector<std::string> names() const;  ///< The names in insertion order.

  /// The entries whose names start with `prefix` and a '/', in order, with that start
  /// removed: nested names group tensors, so `batch.tensors().prefixed("audio")["features"]`
  /// is the batch's "audio/features". The tensors are shared, not copied; "audio/x/y" comes
  /// back as "x/y", and a trailing '/' on `prefix` is ignored. Empty when no name has it.
  TensorDict prefixed(std::string_view prefix) const;

 private:
  std::vector<Item> items_;
};

/// What Dataset::get returns.
using Sample = TensorDict;

}  // namespace mploader
