#include "shared_codec.h"

#include "shared_region.h"

#include <cmath>
#include <cstring>

namespace mploader::python::shared {
namespace {

PyObject* g_dumps = nullptr;  // pickle.dumps and pickle.loads, for everything else
PyObject* g_loads = nullptr;

enum Tag : char {
  kNone = 'N', kTrue = 'T', kFalse = 'F', kInt = 'i', kBigInt = 'I', kFloat = 'f', kStr = 's',
  kBytes = 'b', kTuple = 't', kList = 'l', kDict = 'd', kPickled = 'p',
};

void put_varint(std::string& out, uint64_t v) {
  for (; v >= 0x80; v >>= 7) out.push_back(static_cast<char>((v & 0x7f) | 0x80));
  out.push_back(static_cast<char>(v));
}

bool get_varint(std::string_view& data, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64 && !data.empty(); shift += 7) {
    const auto byte = static_cast<unsigned char>(data.front());
    data.remove_prefix(1);
    v |= uint64_t{byte & 0x7fu} << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

void put_sized(std::string& out, char tag, const char* p, size_t n) {
  out.push_back(tag);
  put_varint(out, n);
  out.append(p, n);
}

template <typename T>
void put_fixed(std::string& out, char tag, T v) {
  out.push_back(tag);
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

// A str's UTF-8; lone surrogates (which a str may hold) pass through, as pickle keeps them.
// Not PyUnicode_AsUTF8AndSize: it keeps the UTF-8 inside each str it encodes, which would grow
// every non-ASCII str of the container a SharedDict is built from.
bool utf8_of(PyObject* s, std::string& scratch, std::string_view& bytes) {
  if (PyUnicode_IS_ASCII(s)) {
    bytes = {static_cast<const char*>(PyUnicode_DATA(s)),
             static_cast<size_t>(PyUnicode_GET_LENGTH(s))};
    return true;
  }
  PyObject* encoded = PyUnicode_AsEncodedString(s, "utf-8", "surrogatepass");
  if (encoded == nullptr) return false;
  scratch.assign(PyBytes_AS_STRING(encoded), static_cast<size_t>(PyBytes_GET_SIZE(encoded)));
  Py_DECREF(encoded);
  bytes = scratch;
  return true;
}

// An int outside 64 bits as little-endian two's complement bytes, through
// int.to_bytes(n, "little", signed=True): one byte more than its bits, so the sign fits.
bool big_int_bytes(PyObject* v, std::string& scratch) {
  const size_t bits = _PyLong_NumBits(v);
  PyObject* method = PyObject_GetAttrString(v, "to_bytes");
  PyObject* args = Py_BuildValue("(ns)", static_cast<Py_ssize_t>(bits / 8 + 1), "little");
  PyObject* kwargs = Py_BuildValue("{s:O}", "signed", Py_True);
  PyObject* raw = method && args && kwargs ? PyObject_Call(method, args, kwargs) : nullptr;
  Py_XDECREF(method);
  Py_XDECREF(args);
  Py_XDECREF(kwargs);
  if (raw == nullptr) return false;
  scratch.assign(PyBytes_AS_STRING(raw), static_cast<size_t>(PyBytes_GET_SIZE(raw)));
  Py_DECREF(raw);
  return true;
}

// An int's KeyBytes: 'i' with its 8 bytes when it fits, else 'I' with its own.
bool int_key(PyObject* v, std::string& scratch, KeyBytes& key) {
  int overflow = 0;
  const long long n = PyLong_AsLongLongAndOverflow(v, &overflow);
  if (n == -1 && PyErr_Occurred()) return false;
  if (overflow == 0) {
    scratch.assign(reinterpret_cast<const char*>(&n), sizeof n);
    key = {kInt, scratch};
    return true;
  }
  if (!big_int_bytes(v, scratch)) return false;
  key = {kBigInt, scratch};
  return true;
}

void put_pickled_bytes(std::string& out, PyObject* pickled) {
  put_sized(out, kPickled, PyBytes_AS_STRING(pickled), static_cast<size_t>(PyBytes_GET_SIZE(pickled)));
}

bool put_pickled(PyObject* value, std::string& out) {
  PyObject* pickled = PyObject_CallFunctionObjArgs(g_dumps, value, nullptr);
  if (pickled == nullptr) return false;
  put_pickled_bytes(out, pickled);
  Py_DECREF(pickled);
  return true;
}

// The fast form, or `too_deep` set (with nothing set in Python) for a value to pickle whole.
bool encode_fast(PyObject* v, std::string& out, int depth, bool& too_deep);

bool encode_items(PyObject* const* items, Py_ssize_t n, char tag, std::string& out, int depth,
                  bool& too_deep) {
  out.push_back(tag);
  put_varint(out, static_cast<uint64_t>(n));
  for (Py_ssize_t i = 0; i < n && !too_deep; ++i) {
    if (!encode_fast(items[i], out, depth + 1, too_deep)) return false;
  }
  return true;
}

bool encode_dict(PyObject* v, std::string& out, int depth, bool& too_deep) {
  out.push_back(kDict);
  put_varint(out, static_cast<uint64_t>(PyDict_GET_SIZE(v)));
  PyObject *key, *item;
  Py_ssize_t pos = 0;
  while (!too_deep && PyDict_Next(v, &pos, &key, &item)) {
    if (!encode_fast(key, out, depth + 1, too_deep) ||
        !encode_fast(item, out, depth + 1, too_deep)) {
      return false;
    }
  }
  return true;
}

bool encode_scalar(PyObject* v, std::string& out, bool& handled) {
  handled = true;
  std::string scratch;
  if (v == Py_None) {
    out.push_back(kNone);
  } else if (PyBool_Check(v)) {
    out.push_back(v == Py_True ? kTrue : kFalse);
  } else if (PyLong_CheckExact(v)) {
    KeyBytes key;
    if (!int_key(v, scratch, key)) return false;
    if (key.tag == kInt) {
      out.push_back(kInt);
      out.append(key.payload);
    } else {
      put_sized(out, kBigInt, key.payload.data(), key.payload.size());
    }
  } else if (PyFloat_CheckExact(v)) {
    put_fixed(out, kFloat, PyFloat_AS_DOUBLE(v));
  } else if (PyUnicode_CheckExact(v)) {
    std::string_view bytes;
    if (!utf8_of(v, scratch, bytes)) return false;
    put_sized(out, kStr, bytes.data(), bytes.size());
  } else if (PyBytes_CheckExact(v)) {
    put_sized(out, kBytes, PyBytes_AS_STRING(v), static_cast<size_t>(PyBytes_GET_SIZE(v)));
  } else {
    handled = false;
  }
  return true;
}

bool encode_fast(PyObject* v, std::string& out, int depth, bool& too_deep) {
  if (depth > kMaxFastDepth) {
    too_deep = true;
    return true;
  }
  bool handled = false;
  if (!encode_scalar(v, out, handled)) return false;
  if (handled) return true;
  if (PyTuple_CheckExact(v)) {
    return encode_items(&PyTuple_GET_ITEM(v, 0), PyTuple_GET_SIZE(v), kTuple, out, depth,
                        too_deep);
  }
  if (PyList_CheckExact(v)) {
    // Items of a list being encoded are not changed under us: the GIL is held throughout.
    return encode_items(PySequence_Fast_ITEMS(v), PyList_GET_SIZE(v), kList, out, depth,
                        too_deep);
  }
  if (PyDict_CheckExact(v)) return encode_dict(v, out, depth, too_deep);
  return put_pickled(v, out);
}

PyObject* corrupt() {
  PyErr_SetString(PyExc_ValueError,
                  "mploader: shared container: an entry's bytes do not decode: its shared memory "
                  "was not written by this version of mploader. Build the container again.");
  return nullptr;
}

bool take(std::string_view& data, size_t n, std::string_view& piece) {
  if (data.size() < n) return false;
  piece = data.substr(0, n);
  data.remove_prefix(n);
  return true;
}

bool take_sized(std::string_view& data, std::string_view& piece) {
  uint64_t n = 0;
  return get_varint(data, n) && n <= data.size() && take(data, static_cast<size_t>(n), piece);
}

PyObject* decode_big_int(std::string_view raw) {
  PyObject* bytes = PyBytes_FromStringAndSize(raw.data(), static_cast<Py_ssize_t>(raw.size()));
  if (bytes == nullptr) return nullptr;
  PyObject* from_bytes = PyObject_GetAttrString(reinterpret_cast<PyObject*>(&PyLong_Type),
                                                "from_bytes");
  PyObject* args = Py_BuildValue("(Os)", bytes, "little");
  PyObject* kwargs = Py_BuildValue("{s:O}", "signed", Py_True);
  PyObject* made = from_bytes && args && kwargs ? PyObject_Call(from_bytes, args, kwargs) : nullptr;
  Py_DECREF(bytes);
  Py_XDECREF(from_bytes);
  Py_XDECREF(args);
  Py_XDECREF(kwargs);
  return made;
}

PyObject* decode_sequence(std::string_view& data, char tag) {
  uint64_t n = 0;
  if (!get_varint(data, n) || n > data.size()) return corrupt();  // each item takes a byte
  const auto count = static_cast<Py_ssize_t>(n);
  PyObject* made = tag == kTuple ? PyTuple_New(count) : PyList_New(count);
  if (made == nullptr) return nullptr;
  for (Py_ssize_t i = 0; i < count; ++i) {
    PyObject* item = decode(data);
    if (item == nullptr) {
      Py_DECREF(made);
      return nullptr;
    }
    if (tag == kTuple) PyTuple_SET_ITEM(made, i, item);
    else PyList_SET_ITEM(made, i, item);
  }
  return made;
}

PyObject* decode_dict(std::string_view& data) {
  uint64_t n = 0;
  if (!get_varint(data, n) || n > data.size()) return corrupt();
  PyObject* made = PyDict_New();
  for (uint64_t i = 0; made != nullptr && i < n; ++i) {
    PyObject* key = decode(data);
    PyObject* value = key ? decode(data) : nullptr;
    if (value == nullptr || PyDict_SetItem(made, key, value) != 0) Py_CLEAR(made);
    Py_XDECREF(key);
    Py_XDECREF(value);
  }
  return made;
}

PyObject* decode_sized(std::string_view& data, char tag) {
  std::string_view piece;
  if (!take_sized(data, piece)) return corrupt();
  const auto n = static_cast<Py_ssize_t>(piece.size());
  switch (tag) {
    case kStr: return PyUnicode_DecodeUTF8(piece.data(), n, "surrogatepass");
    case kBytes: return PyBytes_FromStringAndSize(piece.data(), n);
    case kBigInt: return decode_big_int(piece);
    default: {  // kPickled: loads reads the shared bytes where they lie
      PyObject* view = PyMemoryView_FromMemory(const_cast<char*>(piece.data()), n, PyBUF_READ);
      if (view == nullptr) return nullptr;
      PyObject* made = PyObject_CallFunctionObjArgs(g_loads, view, nullptr);
      Py_DECREF(view);
      return made;
    }
  }
}

}  // namespace

uint64_t KeyBytes::hash() const {
  return hash_bytes(payload) ^ (static_cast<uint64_t>(static_cast<unsigned char>(tag)) *
                                0x9e3779b97f4a7c15ull);
}

bool init_codec() {
  PyObject* pickle = PyImport_ImportModule("pickle");
  if (pickle == nullptr) return false;
  g_dumps = PyObject_GetAttrString(pickle, "dumps");
  g_loads = PyObject_GetAttrString(pickle, "loads");
  Py_DECREF(pickle);
  return g_dumps != nullptr && g_loads != nullptr;
}

bool encode_value(PyObject* value, std::string& out) {
  const size_t start = out.size();
  bool too_deep = false;
  if (!encode_fast(value, out, 0, too_deep)) return false;
  if (!too_deep) return true;
  out.resize(start);  // deep or holding itself: pickle keeps what the fast form cannot
  return put_pickled(value, out);
}

bool encode_key(PyObject* key, std::string& out, uint64_t& hash) {
  if (!PyUnicode_CheckExact(key) && !PyBytes_CheckExact(key) && !PyLong_Check(key)) {
    PyErr_Format(PyExc_TypeError,
                 "mploader: SharedDict: a key is a %s, where keys are str, bytes or int. "
                 "Convert the keys (for example str(key)), or keep this mapping in a plain dict.",
                 Py_TYPE(key)->tp_name);
    return false;
  }
  if (!PyLong_CheckExact(key) && !PyBool_Check(key) && PyLong_Check(key)) {
    PyObject* plain = PyNumber_Index(key);  // an IntEnum member is kept as its int
    if (plain == nullptr) return false;
    const bool ok = encode_key(plain, out, hash);
    Py_DECREF(plain);
    return ok;
  }
  const size_t start = out.size();
  if (!encode_value(key, out)) return false;
  std::string scratch;
  KeyBytes bytes;
  if (!stored_key(std::string_view(out).substr(start), scratch, bytes)) {
    corrupt();
    return false;
  }
  hash = bytes.hash();
  return true;
}

Lookup lookup_key(PyObject* key, std::string& scratch, KeyBytes& bytes) {
  if (PyUnicode_Check(key)) {
    std::string_view utf8;
    if (!utf8_of(key, scratch, utf8)) return Lookup::kError;
    bytes = {kStr, utf8};
    return Lookup::kFound;
  }
  if (PyBytes_Check(key)) {
    bytes = {kBytes, {PyBytes_AS_STRING(key), static_cast<size_t>(PyBytes_GET_SIZE(key))}};
    return Lookup::kFound;
  }
  if (PyLong_Check(key)) return int_key(key, scratch, bytes) ? Lookup::kFound : Lookup::kError;
  PyObject* whole = nullptr;  // 2.0 finds the key 2, as in a dict; numpy's ints find theirs
  if (PyFloat_Check(key)) {
    const double d = PyFloat_AS_DOUBLE(key);
    if (std::isfinite(d) && d == std::floor(d)) whole = PyLong_FromDouble(d);
  } else if (PyIndex_Check(key)) {
    whole = PyNumber_Index(key);
  }
  if (whole != nullptr) {
    const bool ok = int_key(whole, scratch, bytes);
    Py_DECREF(whole);
    return ok ? Lookup::kFound : Lookup::kError;
  }
  if (PyErr_Occurred() || PyObject_Hash(key) == -1) return Lookup::kError;
  return Lookup::kAbsent;
}

bool stored_key(std::string_view data, std::string& scratch, KeyBytes& bytes) {
  if (data.empty()) return false;
  const char tag = data.front();
  data.remove_prefix(1);
  switch (tag) {
    case kTrue:
    case kFalse: {
      const long long n = tag == kTrue ? 1 : 0;
      scratch.assign(reinterpret_cast<const char*>(&n), sizeof n);
      bytes = {kInt, scratch};
      return true;
    }
    case kInt:
      if (data.size() < sizeof(long long)) return false;
      bytes = {kInt, data.substr(0, sizeof(long long))};
      return true;
    case kBigInt:
    case kStr:
    case kBytes: {
      std::string_view piece;
      if (!take_sized(data, piece)) return false;
      bytes = {tag, piece};
      return true;
    }
    default:
      return false;
  }
}

PyObject* decode(std::string_view& data) {
  if (data.empty()) return corrupt();
  const char tag = data.front();
  data.remove_prefix(1);
  std::string_view piece;
  switch (tag) {
    case kNone: Py_RETURN_NONE;
    case kTrue: Py_RETURN_TRUE;
    case kFalse: Py_RETURN_FALSE;
    case kInt: {
      long long n = 0;
      if (!take(data, sizeof n, piece)) return corrupt();
      std::memcpy(&n, piece.data(), sizeof n);
      return PyLong_FromLongLong(n);
    }
    case kFloat: {
      double d = 0;
      if (!take(data, sizeof d, piece)) return corrupt();
      std::memcpy(&d, piece.data(), sizeof d);
      return PyFloat_FromDouble(d);
    }
    case kTuple:
    case kList: return decode_sequence(data, tag);
    case kDict: return decode_dict(data);
    case kStr:
    case kBytes:
    case kBigInt:
    case kPickled: return decode_sized(data, tag);
    default: return corrupt();
  }
}

bool skip(std::string_view& data) {
  if (data.empty()) return false;
  const char tag = data.front();
  data.remove_prefix(1);
  std::string_view piece;
  uint64_t n = 0;
  switch (tag) {
    case kNone:
    case kTrue:
    case kFalse: return true;
    case kInt:
    case kFloat: return take(data, 8, piece);
    case kTuple:
    case kList:
    case kDict:
      if (!get_varint(data, n) || n > data.size()) return false;
      for (uint64_t i = 0; i < (tag == kDict ? 2 * n : n); ++i) {
        if (!skip(data)) return false;
      }
      return true;
    case kStr:
    case kBytes:
    case kBigInt:
    case kPickled: return take_sized(data, piece);
    default: return false;
  }
}

}  // namespace mploader::python::shared
