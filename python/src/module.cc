// mploader._C: the compiled half of the Python package. The classes and functions users call
// are in mploader/*.py; this module gives them the Loader, raises mploader's exceptions as the
// package's Python exceptions, and keeps forks of workers safe for the interpreter.
#include "native_dataset.h"
#include "python_dataset.h"
#include "python_leaves.h"
#include "python_loader.h"
#include "shared_table.h"

#include <mploader/embedding.h>
#include <mploader/errors.h>

#include <torch/csrc/utils/pybind.h>

#include <sstream>
#include <string>
#include <vector>

namespace py = pybind11;
using mploader::python::PythonLoader;

namespace mploader::python {
// mploader::init() with `argv`, the GIL released (spawned.cc).
void init_with(const std::vector<std::string>& argv);
}  // namespace mploader::python

namespace {

// Workers are forked by mploader's launcher thread. The child's first Python call deadlocks
// unless the GIL was held across fork() by the forking thread and the interpreter was told, as
// os.fork() does: so the launcher takes the GIL for each fork. The threads that ask it for one
// release the GIL first (every call into the Loader that can start a worker does).
PyGILState_STATE g_fork_gil;  // only the launcher thread forks, one fork at a time

// gc.freeze() around each fork: a worker's collector then never scans, so never writes, the
// objects it inherited, and their pages stay shared. The parent unfreezes its own at once.
PyObject* g_gc_freeze = nullptr;
PyObject* g_gc_unfreeze = nullptr;

void call_gc(PyObject* function) {
  if (function == nullptr) return;
  PyObject* result = PyObject_CallNoArgs(function);
  if (result == nullptr) PyErr_Clear();  // cannot fail in CPython; a fork goes on regardless
  Py_XDECREF(result);
}

void take_gil_before_fork() {
  g_fork_gil = PyGILState_Ensure();
  call_gc(g_gc_freeze);
  PyOS_BeforeFork();
}

void release_gil_in_parent() {
  PyOS_AfterFork_Parent();
  call_gc(g_gc_unfreeze);
  PyGILState_Release(g_fork_gil);
}

void reinit_interpreter_in_child() {
  PyOS_AfterFork_Child();
  // The worker's C++ loop runs without the GIL, as the main process's does, so that threads a
  // dataset starts in the worker can run while it waits; each call into Python takes it.
  PyEval_SaveThread();
}

// An mploader exception as the package's Python exception (mploader/_errors.py), with its
// facts as attributes.
void raise_as_python(const char* kind, const std::string& message, py::dict facts) {
  py::object error =
      py::module_::import("mploader._errors").attr("from_cpp")(kind, message, facts);
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
}

py::dict crash_facts(const mploader::WorkerCrashed& e) {
  py::dict f;
  f["worker_id"] = e.worker_id();
  f["pid"] = e.pid();
  f["cause"] = mploader::to_string(e.cause());
  f["signal"] = e.signal();
  f["exit_code"] = e.exit_code();
  f["indices"] = py::cast(e.in_flight_indices());
  f["report_path"] = e.report_path();
  return f;
}

void translate_exception(std::exception_ptr thrown) {
  try {
    std::rethrow_exception(thrown);
  } catch (const mploader::TimeoutError& e) {
    raise_as_python("Timeout", e.what(), crash_facts(e));
  } catch (const mploader::WorkerCrashed& e) {
    raise_as_python("WorkerCrashed", e.what(), crash_facts(e));
  } catch (const mploader::WorkerError& e) {
    py::dict f;
    f["worker_id"] = e.worker_id();
    f["index"] = e.sample_index();
    f["exception_type"] = e.exception_type();
    f["original_message"] = e.original_message();
    raise_as_python("WorkerError", e.what(), f);
  } catch (const mploader::OptionError& e) {
    py::dict f;
    f["option"] = e.option();
    raise_as_python("OptionError", e.what(), f);
  } catch (const mploader::Error& e) {
    raise_as_python("Error", e.what(), py::dict());
  }
}

// Runs Python's signal handlers while the main thread waits in the engine (set_wait_check):
// Ctrl-C's KeyboardInterrupt, or an alarm handler's exception, ends the wait, as it ends
// torch's waits on its queues.
void run_signal_handlers() {
  py::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
}

py::list built_components() {
  py::list names;
  std::istringstream list(MPLOADER_PY_COMPONENTS);
  for (std::string name; std::getline(list, name, ',');) {
    if (!name.empty()) names.append(name);
  }
  return names;
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "mploader's compiled core; use the mploader package";
  m.attr("__version__") = MPLOADER_PY_VERSION;
  m.attr("built_with_torch") = MPLOADER_PY_TORCH_VERSION;
  m.def("components", &built_components, "The optional components built into this module.");
  m.def("init", &mploader::python::init_with, py::arg("argv"),
        "mploader::init(): the command a spawned worker runs; in a spawned worker (or the "
        "forkserver), becomes it and never returns.");
  m.def("take_in_process_error", &mploader::python::take_in_process_error,
        "The exception a dataset raised with num_workers=0, once.");
  m.def("python_numbers", &mploader::python::python_numbers, py::arg("pairs"),
        "A number field's batch ([rows, 2] kind and bits) with default_collate's dtype.");
  py::module_ gc = py::module_::import("gc");
  g_gc_freeze = py::object(gc.attr("freeze")).release().ptr();
  g_gc_unfreeze = py::object(gc.attr("unfreeze")).release().ptr();
  mploader::ForkHooks hooks;
  hooks.before = &take_gil_before_fork;
  hooks.in_parent = &release_gil_in_parent;
  hooks.in_child = &reinit_interpreter_in_child;
  mploader::set_fork_hooks(hooks);
  mploader::set_wait_check(&run_signal_handlers);
  py::register_exception_translator(&translate_exception);

  mploader::python::bind_native_datasets(m);
  mploader::python::shared::bind_shared_table(m);
  py::class_<PythonLoader>(m, "Loader")
      .def(py::init<py::object, size_t, const py::dict&, py::object>(), py::arg("source"),
           py::arg("size"), py::arg("options"), py::arg("worker_start"))
      .def("set_plan", &PythonLoader::set_plan)
      .def("set_epoch", &PythonLoader::set_epoch)
      .def("batches_per_epoch", &PythonLoader::batches_per_epoch)
      .def("epoch", &PythonLoader::epoch)
      .def("next", &PythonLoader::next)
      .def("state_dict", &PythonLoader::state_dict)
      .def("load_state_dict", &PythonLoader::load_state_dict)
      .def("stats", &PythonLoader::stats)
      .def("worker_pids", &PythonLoader::worker_pids)
      .def("closed", &PythonLoader::closed);
}
