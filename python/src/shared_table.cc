// mploader._C.SharedTable: the read side of mploader.SharedList and mploader.SharedDict
// (python/mploader/_shared.py), a type written with CPython's own slots: a lookup is a call of
// mp_subscript, with no binding layer between, so that it costs little more than a dict's.
#include "shared_table.h"

#include "shared_codec.h"
#include "shared_region.h"

#include "util/errors.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <pybind11/pybind11.h>

#include <memory>
#include <string>

namespace mploader::python::shared {
namespace {

struct Table {
  PyObject_HEAD
  Region* region;
  dev_t device;  // of its memfd, to know the descriptor is still it (a worker may close it)
  ino_t inode;
};

struct TableIterator {
  PyObject_HEAD
  PyObject* table;
  uint64_t next;
  int what;  // 0 a dict's keys or a list's items, 1 a dict's values, 2 its items
};

PyTypeObject* g_table_type = nullptr;
PyTypeObject* g_iterator_type = nullptr;

const Region& region_of(PyObject* self) { return *reinterpret_cast<Table*>(self)->region; }

const char* type_name(PyObject* self) { return Py_TYPE(self)->tp_name; }

// mploader.Error for shared memory that could not be made or mapped (`why`, from ipc).
PyObject* raise_error(const std::string& why) {
  const std::string text = detail::message(
      "shared container", "its shared memory could not be made or mapped: " + why,
      "Free memory (its pages count against the memory limit of the process that builds it) "
      "or raise the open-file limit (ulimit -n)");
  PyObject* errors = PyImport_ImportModule("mploader._errors");
  PyObject* type = errors ? PyObject_GetAttrString(errors, "Error") : nullptr;
  if (type != nullptr) PyErr_SetString(type, text.c_str());
  Py_XDECREF(type);
  Py_XDECREF(errors);
  return nullptr;
}

PyObject* corrupt_entry(PyObject* self, uint64_t i) {
  PyErr_Format(PyExc_ValueError,
               "mploader: %s: entry %llu lies outside its shared memory: the memory was not "
               "written by this version of mploader. Build the container again.",
               type_name(self), static_cast<unsigned long long>(i));
  return nullptr;
}

// Entry i's value (a dict's: after its key), or its key.
PyObject* decode_entry(PyObject* self, uint64_t i, bool key) {
  const Region& region = region_of(self);
  std::string_view data = region.entry(i);
  if (data.empty()) return corrupt_entry(self, i);
  if (region.kind() == Kind::kDict && !key && !skip(data)) return corrupt_entry(self, i);
  return decode(data);
}

// The index of the entry whose key equals `key`; -1 when none does, -2 with an error set.
int64_t find_key(PyObject* self, PyObject* key) {
  std::string scratch, stored_scratch;
  KeyBytes wanted, stored;
  const Lookup looked = lookup_key(key, scratch, wanted);
  if (looked != Lookup::kFound) return looked == Lookup::kError ? -2 : -1;
  const Region& region = region_of(self);
  const uint64_t hash = wanted.hash();
  for (uint64_t s = hash, probes = 0; probes < region.capacity(); ++s, ++probes) {
    const uint64_t slot = region.slot(s);
    if (slot == 0) return -1;
    if ((slot >> kSlotIndexBits) != slot_tag(hash)) continue;
    const uint64_t index = (slot & kSlotIndexMask) - 1;
    if (stored_key(region.entry(index), stored_scratch, stored) && stored == wanted) {
      return static_cast<int64_t>(index);
    }
  }
  return -1;
}

bool set_region(Table* table, std::shared_ptr<const ipc::SealedBytes> memory, Kind expected) {
  std::string why;
  std::optional<Region> region = Region::open(std::move(memory), &why);
  if (!region || region->kind() != expected) {
    if (region) why = "it holds a " + std::string(region->kind() == Kind::kDict ? "dict" : "list");
    PyErr_SetString(PyExc_ValueError,
                    detail::message(Py_TYPE(table)->tp_name, "the shared memory given cannot be "
                                                             "read as one: " + why,
                                    "Pass what pickling this type made, unchanged")
                        .c_str());
    return false;
  }
  struct stat st {};
  if (fstat(region->fd(), &st) == 0) {
    table->device = st.st_dev;
    table->inode = st.st_ino;
  }
  table->region = new Region(std::move(*region));
  return true;
}

bool build_region(Table* table, Kind kind, PyObject* source) {
  auto builder = RegionBuilder::start(kind);
  if (!builder.ok()) {
    raise_error(builder.error().describe());
    return false;
  }
  std::string entry;
  uint64_t hash = 0;
  auto add = [&](PyObject* key, PyObject* value) {
    entry.clear();
    if (key != nullptr && !encode_key(key, entry, hash)) return false;
    if (!encode_value(value, entry)) return false;
    ipc::Status added = builder.value()->add(entry, hash);
    if (!added.ok()) raise_error(added.error().describe());
    return added.ok();
  };
  if (kind == Kind::kDict && PyDict_CheckExact(source)) {
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(source, &pos, &key, &value)) {
      if (!add(key, value)) return false;
    }
  } else {  // a list's items, or a mapping's (key, value) pairs
    PyObject* items = kind == Kind::kDict ? PyObject_CallMethod(source, "items", nullptr)
                                          : (Py_INCREF(source), source);
    PyObject* iterator = items ? PyObject_GetIter(items) : nullptr;
    Py_XDECREF(items);
    if (iterator == nullptr) return false;
    bool ok = true;
    for (PyObject* item; ok && (item = PyIter_Next(iterator)) != nullptr; Py_DECREF(item)) {
      PyObject *key = nullptr, *value = item;
      if (kind == Kind::kDict && !PyArg_ParseTuple(item, "OO", &key, &value)) ok = false;
      ok = ok && add(key, value);
    }
    Py_DECREF(iterator);
    if (!ok || PyErr_Occurred()) return false;
  }
  auto memory = builder.value()->finish();
  if (!memory.ok()) {
    raise_error(memory.error().describe());
    return false;
  }
  return set_region(table, memory.take(), kind);
}

PyObject* table_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  const char* how = nullptr;
  const char* kind_name = nullptr;
  PyObject* source = nullptr;
  if (!PyArg_ParseTuple(args, "ssO", &how, &kind_name, &source)) return nullptr;
  const Kind kind = std::string(kind_name) == "dict" ? Kind::kDict : Kind::kList;
  auto* table = reinterpret_cast<Table*>(type->tp_alloc(type, 0));
  if (table == nullptr) return nullptr;
  table->region = nullptr;
  bool ok = false;
  if (std::string(how) == "build") {
    ok = build_region(table, kind, source);
  } else if (std::string(how) == "fd") {
    const int fd = PyLong_AsLong(source);
    ipc::UniqueFd own(fd < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 0));
    auto memory = own ? ipc::SealedBytes::adopt(std::move(own))
                      : ipc::Result<std::shared_ptr<const ipc::SealedBytes>>(
                            ipc::last_error("fcntl(F_DUPFD_CLOEXEC)", "a shared container"));
    if (!memory.ok() && !PyErr_Occurred()) raise_error(memory.error().describe());
    ok = memory.ok() && set_region(table, memory.take(), kind);
  } else {  // "bytes": what a plain pickle carries
    Py_buffer view;
    if (PyObject_GetBuffer(source, &view, PyBUF_SIMPLE) == 0) {
      auto memory = ipc::SealedBytes::create(
          std::string_view(static_cast<const char*>(view.buf), static_cast<size_t>(view.len)),
          "mploader-shared-container");
      PyBuffer_Release(&view);
      if (!memory.ok()) raise_error(memory.error().describe());
      ok = memory.ok() && set_region(table, memory.take(), kind);
    }
  }
  if (!ok) {
    Py_DECREF(table);
    return nullptr;
  }
  return reinterpret_cast<PyObject*>(table);
}

void table_dealloc(PyObject* self) {
  auto* table = reinterpret_cast<Table*>(self);
  PyTypeObject* type = Py_TYPE(self);
  delete table->region;
  type->tp_free(self);
  Py_DECREF(type);
}

Py_ssize_t table_length(PyObject* self) {
  return static_cast<Py_ssize_t>(region_of(self).count());
}

PyObject* list_slice(PyObject* self, PyObject* slice) {
  Py_ssize_t start, stop, step;
  if (PySlice_Unpack(slice, &start, &stop, &step) < 0) return nullptr;
  const Py_ssize_t n = PySlice_AdjustIndices(table_length(self), &start, &stop, step);
  PyObject* made = PyList_New(n);
  for (Py_ssize_t i = 0; made != nullptr && i < n; ++i) {
    PyObject* item = decode_entry(self, static_cast<uint64_t>(start + i * step), false);
    if (item == nullptr) Py_CLEAR(made);
    else PyList_SET_ITEM(made, i, item);
  }
  return made;
}

PyObject* table_subscript(PyObject* self, PyObject* key) {
  if (region_of(self).kind() == Kind::kDict) {
    const int64_t index = find_key(self, key);
    if (index == -1) PyErr_SetObject(PyExc_KeyError, key);
    return index < 0 ? nullptr : decode_entry(self, static_cast<uint64_t>(index), false);
  }
  if (PySlice_Check(key)) return list_slice(self, key);
  Py_ssize_t i = PyNumber_AsSsize_t(key, PyExc_IndexError);
  if (i == -1 && PyErr_Occurred()) return nullptr;
  const Py_ssize_t n = table_length(self);
  if (i < 0) i += n;
  if (i < 0 || i >= n) {
    PyErr_SetString(PyExc_IndexError, "SharedList index out of range");
    return nullptr;
  }
  return decode_entry(self, static_cast<uint64_t>(i), false);
}

int table_contains(PyObject* self, PyObject* value) {
  if (region_of(self).kind() == Kind::kDict) {
    const int64_t index = find_key(self, value);
    return index == -2 ? -1 : index >= 0;
  }
  for (uint64_t i = 0; i < region_of(self).count(); ++i) {
    PyObject* item = decode_entry(self, i, false);
    if (item == nullptr) return -1;
    const int equal = PyObject_RichCompareBool(item, value, Py_EQ);
    Py_DECREF(item);
    if (equal != 0) return equal;
  }
  return 0;
}

PyObject* make_iterator(PyObject* self, int what) {
  auto* it = PyObject_New(TableIterator, g_iterator_type);
  if (it == nullptr) return nullptr;
  Py_INCREF(self);
  it->table = self;
  it->next = 0;
  it->what = what;
  return reinterpret_cast<PyObject*>(it);
}

PyObject* table_iter(PyObject* self) { return make_iterator(self, 0); }

PyObject* table_get(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs < 1 || nargs > 2) {
    PyErr_Format(PyExc_TypeError, "get expected 1 or 2 arguments, got %zd", nargs);
    return nullptr;
  }
  const int64_t index = find_key(self, args[0]);
  if (index == -2) return nullptr;
  if (index >= 0) return decode_entry(self, static_cast<uint64_t>(index), false);
  PyObject* fallback = nargs == 2 ? args[1] : Py_None;
  Py_INCREF(fallback);
  return fallback;
}

PyObject* table_iter_values(PyObject* self, PyObject*) { return make_iterator(self, 1); }
PyObject* table_iter_items(PyObject* self, PyObject*) { return make_iterator(self, 2); }

// The descriptor of the shared memory, or -1 when this process no longer has it open (a worker
// that closed it): pickling then carries the bytes.
PyObject* table_fileno(PyObject* self, PyObject*) {
  const auto* table = reinterpret_cast<Table*>(self);
  struct stat st {};
  const int fd = table->region->fd();
  const bool same = fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == table->device &&
                    st.st_ino == table->inode;
  return PyLong_FromLong(same ? fd : -1);
}

PyObject* table_region_bytes(PyObject* self, PyObject*) {
  const std::string_view bytes = region_of(self).bytes();
  return PyBytes_FromStringAndSize(bytes.data(), static_cast<Py_ssize_t>(bytes.size()));
}

PyObject* table_nbytes(PyObject* self, void*) {
  return PyLong_FromUnsignedLongLong(region_of(self).bytes().size());
}

void iterator_dealloc(PyObject* self) {
  auto* it = reinterpret_cast<TableIterator*>(self);
  Py_XDECREF(it->table);
  PyTypeObject* type = Py_TYPE(self);
  PyObject_Free(self);
  Py_DECREF(type);
}

PyObject* iterator_next(PyObject* self) {
  auto* it = reinterpret_cast<TableIterator*>(self);
  if (it->table == nullptr || it->next >= region_of(it->table).count()) {
    Py_CLEAR(it->table);
    return nullptr;  // StopIteration
  }
  const uint64_t i = it->next++;
  const bool is_dict = region_of(it->table).kind() == Kind::kDict;
  if (it->what == 2) {
    PyObject* key = decode_entry(it->table, i, true);
    PyObject* value = key ? decode_entry(it->table, i, false) : nullptr;
    PyObject* pair = value ? PyTuple_Pack(2, key, value) : nullptr;
    Py_XDECREF(key);
    Py_XDECREF(value);
    return pair;
  }
  return decode_entry(it->table, i, is_dict && it->what == 0);
}

PyObject* iterator_self(PyObject* self) {
  Py_INCREF(self);
  return self;
}

}  // namespace

void bind_shared_table(pybind11::module_& m) {
  static PyMethodDef methods[] = {
      {"get", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&table_get)),
       METH_FASTCALL, "D.get(k[,d]) -> D[k] if k in D, else d (None)."},
      {"_iter_values", &table_iter_values, METH_NOARGS, nullptr},
      {"_iter_items", &table_iter_items, METH_NOARGS, nullptr},
      {"fileno", &table_fileno, METH_NOARGS,
       "The memfd holding the entries, or -1 when this process has closed it."},
      {"_region_bytes", &table_region_bytes, METH_NOARGS, nullptr},
      {nullptr, nullptr, 0, nullptr}};
  static PyGetSetDef getset[] = {
      {"nbytes", &table_nbytes, nullptr, "Bytes of shared memory the entries take.", nullptr},
      {nullptr, nullptr, nullptr, nullptr, nullptr}};
  static PyType_Slot table_slots[] = {
      {Py_tp_new, reinterpret_cast<void*>(&table_new)},
      {Py_tp_dealloc, reinterpret_cast<void*>(&table_dealloc)},
      {Py_tp_iter, reinterpret_cast<void*>(&table_iter)},
      {Py_mp_length, reinterpret_cast<void*>(&table_length)},
      {Py_mp_subscript, reinterpret_cast<void*>(&table_subscript)},
      {Py_sq_length, reinterpret_cast<void*>(&table_length)},
      {Py_sq_contains, reinterpret_cast<void*>(&table_contains)},
      {Py_tp_methods, methods},
      {Py_tp_getset, getset},
      {Py_tp_doc, const_cast<char*>("Entries in sealed shared memory; see mploader.SharedDict.")},
      {0, nullptr}};
  static PyType_Spec table_spec = {"mploader._C.SharedTable", sizeof(Table), 0,
                                   Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, table_slots};
  static PyType_Slot iterator_slots[] = {
      {Py_tp_dealloc, reinterpret_cast<void*>(&iterator_dealloc)},
      {Py_tp_iter, reinterpret_cast<void*>(&iterator_self)},
      {Py_tp_iternext, reinterpret_cast<void*>(&iterator_next)},
      {0, nullptr}};
  static PyType_Spec iterator_spec = {"mploader._C.SharedTableIterator", sizeof(TableIterator), 0,
                                      Py_TPFLAGS_DEFAULT, iterator_slots};
  if (!init_codec()) throw pybind11::error_already_set();
  g_table_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&table_spec));
  g_iterator_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&iterator_spec));
  if (g_table_type == nullptr || g_iterator_type == nullptr) throw pybind11::error_already_set();
  m.attr("SharedTable") = pybind11::handle(reinterpret_cast<PyObject*>(g_table_type));
}

}  // namespace mploader::python::shared
