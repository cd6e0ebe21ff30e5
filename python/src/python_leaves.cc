#include "python_leaves.h"

#include <ATen/ATen.h>
#include <c10/core/DefaultDtype.h>
#include <torch/csrc/autograd/python_variable.h>

#include <cstring>
#include <vector>

namespace mploader::python {
namespace {

enum NumberKind : int64_t { kInt = 0, kBool = 1, kFloat = 2 };
constexpr char kStrTag = 's', kBytesTag = 'b';

bool ends_with(const std::string& name, const char* suffix) {
  return name.size() > 2 && name.compare(name.size() - 2, 2, suffix) == 0;
}

at::Tensor number_pair(PyObject* leaf) {
  int64_t kind = kInt, bits = 0;
  if (PyBool_Check(leaf)) {
    kind = kBool;
    bits = leaf == Py_True ? 1 : 0;
  } else if (PyFloat_Check(leaf)) {
    kind = kFloat;
    const double value = PyFloat_AS_DOUBLE(leaf);
    std::memcpy(&bits, &value, sizeof bits);
  } else {
    bits = PyLong_AsLongLong(leaf);
    if (bits == -1 && PyErr_Occurred()) throw py::error_already_set();
  }
  at::Tensor pair = at::empty({2}, at::kLong);
  pair.data_ptr<int64_t>()[0] = kind;
  pair.data_ptr<int64_t>()[1] = bits;
  return pair;
}

// The text's bytes behind its tag; a str with lone surrogates (which UTF-8 cannot hold) is
// kept with them, as pickling would keep it.
std::string tagged_text(PyObject* leaf) {
  if (PyBytes_Check(leaf)) {
    std::string out(1, kBytesTag);
    out.append(PyBytes_AS_STRING(leaf), static_cast<size_t>(PyBytes_GET_SIZE(leaf)));
    return out;
  }
  Py_ssize_t length = 0;
  const char* utf8 = PyUnicode_AsUTF8AndSize(leaf, &length);
  if (utf8 != nullptr) return kStrTag + std::string(utf8, static_cast<size_t>(length));
  PyErr_Clear();
  py::object encoded =
      py::reinterpret_steal<py::object>(PyUnicode_AsEncodedString(leaf, "utf-8", "surrogatepass"));
  if (!encoded) throw py::error_already_set();
  return kStrTag + std::string(PyBytes_AS_STRING(encoded.ptr()),
                               static_cast<size_t>(PyBytes_GET_SIZE(encoded.ptr())));
}

double number_value(int64_t kind, int64_t bits) {
  if (kind != kFloat) return static_cast<double>(bits);
  double value = 0;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

}  // namespace

void add_leaf(Sample& sample, std::string name, PyObject* leaf) {
  if (THPVariable_Check(leaf)) {
    sample.set(std::move(name), THPVariable_Unpack(leaf));
  } else if (ends_with(name, "|n")) {
    sample.set(std::move(name), number_pair(leaf));
  } else {
    const std::string text = tagged_text(leaf);
    sample.set_bytes(std::move(name), text.data(), text.size());
  }
}

at::Tensor python_numbers(const at::Tensor& pairs) {
  const at::Tensor p = pairs.contiguous();
  const int64_t rows = p.size(0);
  const int64_t* v = p.data_ptr<int64_t>();
  bool any_float = false, all_bool = true;
  for (int64_t r = 0; r < rows; ++r) {
    any_float |= v[2 * r] == kFloat;
    all_bool &= v[2 * r] == kBool;
  }
  if (rows > 0 && v[0] != kFloat && !any_float) {
    at::Tensor out = at::empty({rows}, all_bool ? at::kBool : at::kLong);
    for (int64_t r = 0; r < rows; ++r) {
      if (all_bool) out.data_ptr<bool>()[r] = v[2 * r + 1] != 0;
      else out.data_ptr<int64_t>()[r] = v[2 * r + 1];
    }
    return out;
  }
  at::Tensor out = at::empty({rows}, at::kDouble);
  for (int64_t r = 0; r < rows; ++r) out.data_ptr<double>()[r] = number_value(v[2 * r], v[2 * r + 1]);
  if (rows > 0 && v[0] == kFloat) return out;  // default_collate: torch.tensor(dtype=float64)
  return out.to(c10::typeMetaToScalarType(c10::get_default_dtype()));
}

py::list tagged_text_rows(const TextColumn& column) {
  py::list rows(column.size());
  for (size_t r = 0; r < column.size(); ++r) {
    const std::string_view row = column[r];
    const char* body = row.empty() ? row.data() : row.data() + 1;
    const auto size = static_cast<Py_ssize_t>(row.empty() ? 0 : row.size() - 1);
    PyObject* item = !row.empty() && row[0] == kBytesTag
                         ? PyBytes_FromStringAndSize(body, size)
                         : PyUnicode_DecodeUTF8(body, size, "surrogatepass");
    if (item == nullptr) throw py::error_already_set();
    PyList_SET_ITEM(rows.ptr(), static_cast<Py_ssize_t>(r), item);
  }
  return rows;
}

}  // namespace mploader::python
