#include <mploader/tensor_dict.h>

#include "util/errors.h"

#include <mploader/errors.h>

#include <stdexcept>

namespace mploader {

TensorDict::TensorDict(std::initializer_list<Item> items) {
  for (const Item& item : items) set(item.first, item.second);
}

namespace {

// Replaces the value stored under `name` in `items`, or appends it: one name, one entry.
template <typename Value>
void put(std::vector<std::pair<std::string, Value>>& items, std::string name, Value value) {
  for (auto& item : items) {
    if (item.first == name) {
      item.second = std::move(value);
      return;
    }
  }
  items.emplace_back(std::move(name), std::move(value));
}

// Removes the entry called `name` from `items`, if there is one.
template <typename Value>
void drop(std::vector<std::pair<std::string, Value>>& items, std::string_view name) {
  for (auto it = items.begin(); it != items.end(); ++it) {
    if (it->first == name) {
      items.erase(it);
      return;
    }
  }
}

}  // namespace

void TensorDict::set(std::string name, at::Tensor tensor) {
  if (!texts_.empty()) erase_text(name);
  put(items_, std::move(name), std::move(tensor));
}

void TensorDict::set_text(std::string name, std::string value) {
  if (!items_.empty()) erase_tensor(name);
  put(texts_, std::move(name), std::move(value));
}

void TensorDict::set_bytes(std::string name, const void* data, size_t size) {
  set_text(std::move(name), std::string(static_cast<const char*>(data), size));
}

const std::string* TensorDict::find_text(std::string_view name) const {
  for (const TextItem& item : texts_) {
    if (item.first == name) return &item.second;
  }
  return nullptr;
}

std::string_view TensorDict::text(std::string_view name) const {
  if (const std::string* t = find_text(name)) return *t;
  std::string have;
  for (const TextItem& item : texts_) have += (have.empty() ? "'" : ", '") + item.first + "'";
  throw OptionError("name", detail::message("TensorDict",
                                            "no text field named '" + std::string(name) + "'" +
                                                (find(name) != nullptr ? " (it is a tensor)"
                                                                       : "") +
                                                "; text fields: " +
                                                (have.empty() ? "none" : have),
                                            find(name) != nullptr
                                                ? "Use operator[] for a tensor"
                                                : "Ask for one of its text fields"));
}

void TensorDict::erase_text(std::string_view name) { drop(texts_, name); }

void TensorDict::erase_tensor(std::string_view name) { drop(items_, name); }

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
  throw OptionError("name", detail::message("TensorDict",
                                            "no tensor named '" + std::string(name) + "'" +
                                                (find_text(name) != nullptr
                                                     ? " (it is a text field)"
                                                     : "") +
                                                "; the tensors are " +
                                                (have.empty() ? "none" : have),
                                            find_text(name) != nullptr
                                                ? "Use text() for a text field"
                                                : "Ask for one of its tensors"));
}

std::vector<std::string> TensorDict::names() const {
  std::vector<std::string> out;
  for (const Item& item : items_) out.push_back(item.first);
  return out;
}

TensorDict TensorDict::prefixed(std::string_view prefix) const {
  while (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
  // The rest of `name` after "<prefix>/", or empty when it does not start so.
  auto rest_of = [prefix](std::string_view name) {
    const bool nested = name.size() > prefix.size() + 1 &&
                        name.compare(0, prefix.size(), prefix) == 0 && name[prefix.size()] == '/';
    return nested ? name.substr(prefix.size() + 1) : std::string_view();
  };
  // Names are unique here, so each stripped one is too: append, no search.
  TensorDict out;
  for (const Item& item : items_) {
    const std::string_view rest = rest_of(item.first);
    if (!rest.empty()) out.items_.emplace_back(std::string(rest), item.second);
  }
  for (const TextItem& item : texts_) {
    const std::string_view rest = rest_of(item.first);
    if (!rest.empty()) out.texts_.emplace_back(std::string(rest), item.second);
  }
  return out;
}

}  // namespace mploader
