// The Loader behind mploader.DataLoader: a Loader over a PythonDataset whose batches are the
// ones the Python side drew for each epoch (torch's samplers, run in the main process), handed
// out as named tensors and text for mploader/_structure.py to nest again.
#pragma once

#include <mploader/loader.h>
#include <mploader/sampler.h>

#include "python_object.h"

#include <pybind11/pybind11.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace mploader::python {

namespace py = pybind11;

// The batches of each epoch as the Python side drew them (set_plan), served to the Loader when
// it starts that epoch. Thread-safe.
class DrawnBatches : public BatchSampler {
 public:
  explicit DrawnBatches(size_t max_batch_size) : max_batch_size_(max_batch_size) {}
  // Keeps `batches` as epoch `epoch`'s plan; plans of epochs before epoch - 1 are dropped.
  void set_plan(uint64_t epoch, std::vector<std::vector<int64_t>> batches);
  std::vector<std::vector<int64_t>> batches(size_t dataset_size, uint64_t epoch) override;
  size_t max_batch_size() const override { return max_batch_size_; }

 private:
  size_t max_batch_size_;
  std::mutex mutex_;
  std::map<uint64_t, std::vector<std::vector<int64_t>>> plans_;  // GUARDED_BY(mutex_)
};

class PythonLoader {
 public:
  // `source`: a NativeDataset (a C++ dataset: no Python in the workers), or `fetch(index)`
  // giving a Python sample's leaves (PythonDataset), or the sample itself when
  // options["collate_fn"] (a PythonCollator's) is given; `size`: len(dataset); `options`: the
  // LoaderOptions fields by name (mploader/_loader.py); `worker_start(id, num_workers, seed,
  // epoch, rank, world_size)`: run in each worker process as it starts. A map-style dataset's
  // batches are the ones set_plan() gives; a stream (StreamingDataset) plans its own.
  PythonLoader(py::object source, size_t size, const py::dict& options, py::object worker_start);
  // Stops the workers with the GIL released.
  ~PythonLoader();

  // Reads `batches` (an iterable of lists of indices) as epoch `epoch`'s plan.
  void set_plan(uint64_t epoch, const py::iterable& batches);
  void set_epoch(uint64_t epoch);
  // The next epoch's batches (a stream's, which the engine plans).
  size_t batches_per_epoch() const;
  uint64_t epoch() const;
  // (tensors, texts, indices, worker id): [(name, Tensor)], [(name, [str or bytes])], [int],
  // int (-1 without workers); None at the end of the epoch. `start` begins a new epoch
  // (abandoning what is left of the running one).
  py::object next(bool start);
  std::string state_dict() const;
  void load_state_dict(const std::string& state);
  py::dict stats() const;
  std::vector<int> worker_pids() const;
  // True once a signal handler's exception (KeyboardInterrupt) ended a wait in next(): the
  // workers were stopped then, and the DataLoader makes a new loader for its next epoch.
  bool closed() const { return loader_ == nullptr; }

 private:
  std::shared_ptr<DrawnBatches> batches_;
  std::unique_ptr<Loader> loader_;
};

}  // namespace mploader::python
