// A map-style Python dataset as an mploader::Dataset: get() runs the dataset's __getitem__ (in
// a worker process, or in the caller's thread with num_workers = 0) through the package's
// worker module, which flattens the sample into named leaves; their tensors and text go into
// the batch's shared memory as a C++ dataset's would.
#pragma once

#include <mploader/dataset.h>
#include <mploader/worker_info.h>

#include "core/recipes.h"
#include "python_collate.h"
#include "python_object.h"

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <memory>
#include <vector>

namespace mploader::python {

namespace py = pybind11;

class PythonDataset : public Dataset, public detail::SharedRecipeSource {
 public:
  // `fetch(index)` returns the sample as a list of (name, leaf) pairs: a leaf is a Tensor, a
  // number, a str or bytes (mploader/_structure.py, python_leaves.h). `size` is len(dataset). With `pending` (a collate_fn
  // is given), `fetch(index)` returns the sample as it is, which `pending` keeps for the
  // collator.
  PythonDataset(py::object fetch, size_t size, std::shared_ptr<PendingSamples> pending);

  size_t size() const override { return size_; }
  Sample get(int64_t index) override;
  // Tells `fetch` (when it has start_batch()) that a batch begins: a batch's samples follow
  // its first one's structure, as default_collate reads them.
  void prepare_batch(const int64_t* indices, size_t count) override;
  // For start_method spawn and forkserver: how the worker builds it again, the payload that
  // mploader/_spawning.py pickled straight into sealed shared memory (`file`, its open memfd)
  // for the factory "mploader.python" (python/src/spawned.cc). That memory is handed to the
  // workers as it is: the pickled dataset is never copied in this process. `fds`: the
  // descriptors of the shared containers the payload refers to (mploader/_shared.py), copied
  // here and handed to each worker beside it.
  void set_recipe(const py::object& file, const std::vector<int>& fds);
  // A copy of the payload; the loader takes recipe_config() instead.
  std::optional<DatasetRecipe> recipe() const override;
  std::string recipe_factory() const override { return "mploader.python"; }
  std::shared_ptr<const ipc::SealedBytes> recipe_config() const override { return recipe_; }
  std::shared_ptr<const std::vector<ipc::UniqueFd>> recipe_descriptors() const override {
    return recipe_fds_;
  }
  // In a spawned worker, where LoaderOptions::worker_init cannot reach: `start(id,
  // num_workers, seed, epoch, rank, world_size)` runs before the process's first sample.
  void start_with(py::object start) { start_ = std::make_unique<HeldObject>(std::move(start)); }

 private:
  void start_once();

  HeldObject fetch_;
  bool starts_batches_ = false;
  size_t size_;
  std::shared_ptr<PendingSamples> pending_;
  std::shared_ptr<const ipc::SealedBytes> recipe_;
  std::shared_ptr<const std::vector<ipc::UniqueFd>> recipe_fds_;
  std::unique_ptr<HeldObject> start_;
  bool started_ = false;
};

// Calls the Python worker start (mploader/_worker.py's starter) with `info`'s fields. With the
// GIL held.
void call_worker_start(const py::object& start, const WorkerInfo& info);

// Called inside `catch (py::error_already_set& e)` with the GIL held: the Python exception as
// a ForeignError carrying its type's qualified name and its traceback (as text).
// In this process (num_workers = 0) the exception object is also kept, for
// take_in_process_error().
[[noreturn]] void throw_foreign(py::error_already_set& e);

// The exception object the dataset raised in this process (num_workers = 0), once; None when
// there is none. Call with the GIL held.
py::object take_in_process_error();

}  // namespace mploader::python
