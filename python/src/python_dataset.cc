#include "python_dataset.h"

#include "python_leaves.h"
#include "util/errors.h"
#include "worker/worker_spec.h"

#include <fcntl.h>

#include <mploader/errors.h>
#include <mploader/worker_info.h>

#include <string>
#include <utility>

namespace mploader::python {

PythonDataset::PythonDataset(py::object fetch, size_t size,
                             std::shared_ptr<PendingSamples> pending)
    : fetch_(std::move(fetch)), size_(size), pending_(std::move(pending)) {
  starts_batches_ = py::hasattr(fetch_.get(), "start_batch");
}

namespace {

// With num_workers = 0 the dataset runs in this process: its exception object itself is kept
// here, and raised again unchanged (as torch's DataLoader does) instead of a copy made from its
// text. Guarded by the GIL; a raw reference, so that no destructor runs after the interpreter
// has ended.
PyObject* g_in_process_error = nullptr;

}  // namespace

py::object take_in_process_error() {
  if (g_in_process_error == nullptr) return py::none();
  return py::reinterpret_steal<py::object>(std::exchange(g_in_process_error, nullptr));
}

void throw_foreign(py::error_already_set& e) {
  if (!worker_info()) {
    Py_XDECREF(g_in_process_error);
    g_in_process_error = py::object(e.value()).release().ptr();
  }
  // The worker module formats it as torch's DataLoader does (type, message, traceback), so
  // that the main process can raise it again with the same type.
  std::string type_name = "builtins.RuntimeError", text = e.what();
  try {
    // An error raised from C (no Python frame) has no traceback: None, not a null handle.
    const py::object trace = e.trace() ? py::reinterpret_borrow<py::object>(e.trace()) : py::none();
    py::tuple described = py::module_::import("mploader._worker")
                              .attr("describe_exception")(e.type(), e.value(), trace);
    type_name = described[0].cast<std::string>();
    text = described[1].cast<std::string>();
  } catch (py::error_already_set& inner) {
    text += " (and describing it failed: " + std::string(inner.what()) + ")";
  }
  throw ForeignError(std::move(type_name), text);
}

namespace {

// Our own copies of the shared containers' descriptors, which the containers keep open.
std::shared_ptr<const std::vector<ipc::UniqueFd>> copied_descriptors(const std::vector<int>& fds) {
  if (fds.size() > worker::kMaxDatasetFds) {
    throw OptionError("start_method", detail::message(
        "start_method", "the dataset holds " + std::to_string(fds.size()) + " SharedDict and "
        "SharedList containers; at most " + std::to_string(worker::kMaxDatasetFds) +
        " are handed to spawned workers",
        "Put their entries into fewer containers (for example one SharedDict of tuples), or "
        "use start_method 'fork'"));
  }
  auto copies = std::make_shared<std::vector<ipc::UniqueFd>>();
  for (int fd : fds) {
    copies->emplace_back(fcntl(fd, F_DUPFD_CLOEXEC, 0));
    if (!copies->back()) {
      throw Error(detail::message("start_method", "a shared container's descriptor could not "
                                  "be copied: " + ipc::last_error("fcntl(F_DUPFD_CLOEXEC)",
                                                                  "a shared container").describe(),
                                  "Raise the open-file limit (ulimit -n)"));
    }
  }
  return copies;
}

}  // namespace

void PythonDataset::set_recipe(const py::object& file, const std::vector<int>& fds) {
  recipe_fds_ = copied_descriptors(fds);
  const int fd = file.attr("fileno")().cast<int>();
  ipc::UniqueFd own(fcntl(fd, F_DUPFD_CLOEXEC, 0));
  auto sealed = own ? ipc::SealedBytes::adopt(std::move(own))
                    : ipc::Result<std::shared_ptr<const ipc::SealedBytes>>(
                          ipc::last_error("fcntl(F_DUPFD_CLOEXEC)", "the pickled dataset"));
  if (!sealed.ok()) {
    throw Error(detail::message("start_method", "the pickled dataset's shared memory could not "
                                                "be taken: " + sealed.error().describe(),
                                "Free memory or descriptors, or use start_method 'fork'"));
  }
  recipe_ = sealed.take();
}

std::optional<DatasetRecipe> PythonDataset::recipe() const {
  if (!recipe_) return std::nullopt;
  return DatasetRecipe{recipe_factory(), std::string(recipe_->view())};
}

void call_worker_start(const py::object& start, const WorkerInfo& info) {
  start(info.id, info.num_workers, info.seed, info.epoch, info.rank, info.world_size);
}

void PythonDataset::start_once() {
  if (started_ || !start_) return;
  started_ = true;
  const std::optional<WorkerInfo> info = worker_info();
  if (info) call_worker_start(start_->get(), *info);
}

void PythonDataset::prepare_batch(const int64_t*, size_t) {
  if (!starts_batches_) return;
  py::gil_scoped_acquire gil;
  try {
    fetch_.get().attr("start_batch")();
  } catch (py::error_already_set& e) {
    throw_foreign(e);
  }
}

Sample PythonDataset::get(int64_t index) {
  py::gil_scoped_acquire gil;
  Sample sample;
  try {
    start_once();
    if (pending_) return pending_->keep(fetch_.get()(index));
    py::list leaves = fetch_.get()(index);
    for (py::handle item : leaves) {
      auto pair = item.cast<py::tuple>();
      add_leaf(sample, pair[0].cast<std::string>(), pair[1].ptr());
    }
  } catch (py::error_already_set& e) {
    throw_foreign(e);
  }
  return sample;
}

}  // namespace mploader::python
