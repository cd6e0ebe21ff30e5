#include <mploader/tensor_dict.h>

#include <stdexcept>

namespace mploader {

TensorDict::TensorDict(std::initializer_list<Item> items) {
  for (const Item& item : items) set(item.first, item.second);
}

void TensorDict::set(std::string name, at::Tensor tensor) {
  for (Item& item : items_) {
    if (item.first == name) {
      item.second = std::move(tensor);
      return;
    }
  }
  items_.emplace_back(std::move(name), std::move(tensor));
}

const at::Tensor* TensorDict::find(std::string_view name) const {
  for (const Item& item : items_) {
    if (item.first == name) return &item.second;
  }
  return nullptr;
}

const at::Tensor& TensorDict::operator[](std::string_view name) const {
  if (const at::Tensor* t = find(name)) return *t;
  std::string have;
  for (const Item& item : items_) have += (have.empty() ? "'" : ", '") + item.first + "'";
  throw std::out_of_range("mploader: no tensor named '" + std::string(name) +
                          "'; this batch has " + (have.empty() ? "none" : have));
}

std::vector<std::string> TensorDict::names() const {
  std::vector<std::string> out;
  for (const Item& item : items_) out.push_back(item.first);
  return out;
}

TensorDict TensorDict::prefixed(std::string_view prefix) const {
  while (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
  TensorDict out;
  for (const Item& item : items_) {
    const std::string_view name = item.first;
    if (name.size() > prefix.size() + 1 && name.compare(0, prefix.size(), prefix) == 0 &&
        name[prefix.size()] == '/') {
      // Names are unique here, so each stripped one is too: append, no search.
      out.items_.emplace_back(std::string(name.substr(prefix.size() + 1)), item.second);
    }
  }
  return out;
}

}  // namespace mploader
