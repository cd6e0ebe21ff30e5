// TensorDict: an ordered set of named tensors. A dataset returns one per sample; a Batch holds
// one per batch. Order is kept so that the layout of a batch in shared memory is stable.
//
// Not safe for concurrent mutation; concurrent const access is fine.
#pragma once

#include <ATen/core/Tensor.h>

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mploader {

class TensorDict {
 public:
  using Item = std::pair<std::string, at::Tensor>;

  TensorDict() = default;
  TensorDict(std::initializer_list<Item> items);

  // Adds `name`, or replaces the tensor already stored under it.
  void set(std::string name, at::Tensor tensor);
  // Throws std::out_of_range naming the missing key and the keys present.
  const at::Tensor& operator[](std::string_view name) const;
  const at::Tensor* find(std::string_view name) const;
  bool contains(std::string_view name) const { return find(name) != nullptr; }

  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  std::vector<Item>::const_iterator begin() const { return items_.begin(); }
  std::vector<Item>::const_iterator end() const { return items_.end(); }
  std::vector<std::string> names() const;

 private:
  std::vector<Item> items_;
};

// What Dataset::get returns.
using Sample = TensorDict;

}  // namespace mploader
