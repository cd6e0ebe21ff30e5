// A Python collate_fn, run where the batch is made (a worker, or the caller with
// num_workers = 0): the dataset keeps each sample as the Python object __getitem__ returned
// and gives the engine a key to it; the collator hands the batch's objects to collate_fn and
// copies the tensors of what it returns (flattened by mploader/_structure.py) into the slot.
#pragma once

#include <mploader/collate.h>

#include "python_object.h"

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace mploader::python {

namespace py = pybind11;

// The samples read for batches not collated yet. Used with the GIL held.
class PendingSamples {
 public:
  PendingSamples() = default;
  PendingSamples(const PendingSamples&) = delete;
  PendingSamples& operator=(const PendingSamples&) = delete;
  ~PendingSamples();
  // A sample that collate_fn will get, as the one-tensor Sample that stands for it.
  Sample keep(py::object sample);
  // The objects `samples` stand for, in order; forgets every kept object (those of batches
  // that failed before collation too).
  py::list take(const std::vector<Sample>& samples);

 private:
  int64_t next_key_ = 0;
  std::unordered_map<int64_t, py::object> kept_;
};

class PythonCollator : public Collator {
 public:
  // `collate(samples)` returns [(name, Tensor)] (mploader/_worker.py).
  PythonCollator(py::object collate, std::shared_ptr<PendingSamples> pending);
  std::vector<TensorLayout> layout(const std::vector<Sample>& samples) override;
  void fill(const std::vector<Sample>& samples, std::vector<at::Tensor>& outputs) override;
  // For start_method spawn and forkserver: the factory "mploader.python_collate" and its
  // payload (python/src/spawned.cc).
  void set_recipe(std::string payload) { recipe_ = std::move(payload); }
  std::optional<std::string> recipe() const override;

 private:
  std::string recipe_;
  HeldObject collate_;
  std::shared_ptr<PendingSamples> pending_;
  std::vector<std::pair<std::string, at::Tensor>> collated_;  // from layout() to fill()
};

}  // namespace mploader::python
