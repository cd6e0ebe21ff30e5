// A Python object that C++ code may keep and drop on any thread: the Loader ends its workers
// and drops its dataset and callbacks with the GIL released (a fork in progress needs it).
#pragma once

#include <pybind11/pybind11.h>

#include <utility>

namespace mploader::python {

namespace py = pybind11;

class HeldObject {
 public:
  explicit HeldObject(py::object object) : object_(std::move(object)) {}
  HeldObject(const HeldObject&) = delete;
  HeldObject& operator=(const HeldObject&) = delete;
  ~HeldObject() {
    if (!Py_IsInitialized()) {
      object_.release();  // the interpreter is gone: nothing to drop the reference in
      return;
    }
    py::gil_scoped_acquire gil;
    object_ = py::object();
  }
  // Call with the GIL held.
  const py::object& get() const { return object_; }

 private:
  py::object object_;
};

}  // namespace mploader::python
