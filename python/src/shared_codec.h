// Python values as the bytes of a shared container's entries (shared_region.h), and back.
//
// str, bytes, int, float, bool, None and tuples, lists and dicts of them (their exact types)
// have a form of their own, decoded without pickle; anything else, a subclass included (a
// named tuple keeps its type), is pickled per entry. A value nested deeper than
// kMaxFastDepth, or one that holds itself, is pickled whole.
//
// Every function here is called with the GIL held; false or null means a Python error is set.
#pragma once

#include <Python.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace mploader::python::shared {

constexpr int kMaxFastDepth = 64;

// What a dict key is compared and hashed by: 1, True and 1.0 are one key, as in a dict.
struct KeyBytes {
  char tag = 0;  // 'i' an int (bool included) that fits in 64 bits, 'I' a larger one, 's', 'b'
  std::string_view payload;
  uint64_t hash() const;
  bool operator==(const KeyBytes& o) const { return tag == o.tag && payload == o.payload; }
};

// Fetches pickle's dumps and loads; call once, at import.
bool init_codec();

// Appends `value` encoded to `out`.
bool encode_value(PyObject* value, std::string& out);
// Appends a dict key encoded to `out` and sets `hash` to its KeyBytes' hash. A key that is not
// a str, bytes or int is a TypeError naming its type.
bool encode_key(PyObject* key, std::string& out, uint64_t& hash);

// A key looked up: kFound when `bytes` is set, kAbsent when no stored key can equal it (a
// float that is not whole, a tuple), kError when hashing it raised (an unhashable key).
enum class Lookup { kFound, kAbsent, kError };
Lookup lookup_key(PyObject* key, std::string& scratch, KeyBytes& bytes);

// The stored key at the start of `data`, as KeyBytes (`scratch` holds what a bool becomes);
// false, with no error set, for bytes that are not a key.
bool stored_key(std::string_view data, std::string& scratch, KeyBytes& bytes);

// A new object decoded from the start of `data`, which is advanced past it; null with
// ValueError set for bytes that do not decode.
PyObject* decode(std::string_view& data);
// Advances `data` past one encoded object; false for bytes that do not decode.
bool skip(std::string_view& data);

}  // namespace mploader::python::shared
