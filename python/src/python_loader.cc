#include "python_loader.h"

#include "native_dataset.h"
#include "python_dataset.h"
#include "python_leaves.h"

#include <mploader/errors.h>
#include <mploader/streaming.h>
#include <mploader/worker_info.h>

#include <torch/csrc/utils/pybind.h>

#include <chrono>
#include <string>
#include <utility>

namespace mploader::python {
namespace {

template <typename T>
void take(const py::dict& options, const char* name, T& field) {
  if (options.contains(name)) field = options[name].cast<T>();
}

StartMethod start_method_named(const std::string& name) {
  if (name == "fork") return StartMethod::kFork;
  if (name == "spawn") return StartMethod::kSpawn;
  if (name == "forkserver") return StartMethod::kForkserver;
  throw OptionError("start_method", "mploader: start_method '" + name +
                                        "' is not one of 'fork', 'spawn' and 'forkserver'. "
                                        "Give one of those.");
}

LoaderOptions options_from(const py::dict& options) {
  LoaderOptions o;
  take(options, "num_workers", o.num_workers);
  take(options, "prefetch_factor", o.prefetch_factor);
  take(options, "seed", o.seed);
  take(options, "pin_memory", o.pin_memory);
  take(options, "persistent_workers", o.persistent_workers);
  take(options, "in_order", o.in_order);
  take(options, "crash_dir", o.crash_dir);
  take(options, "max_restarts_per_epoch", o.max_restarts_per_epoch);
  take(options, "quarantine_after", o.quarantine_after);
  take(options, "max_shm_bytes", o.max_shm_bytes);
  take(options, "max_batch_bytes", o.max_batch_bytes);
  if (options.contains("timeout_ms")) {
    o.timeout = std::chrono::milliseconds(options["timeout_ms"].cast<int64_t>());
  }
  if (options.contains("start_method")) {
    o.start_method = start_method_named(options["start_method"].cast<std::string>());
  }
  return o;
}

// A text field's rows: a Python sample's ("...|t") each as it was; a C++ reader's as str, or as
// bytes when the field is not all UTF-8.
py::list text_rows(const std::string& name, const TextColumn& column) {
  if (name.size() > 2 && name.compare(name.size() - 2, 2, "|t") == 0) {
    return tagged_text_rows(column);  // a Python sample's str and bytes, each as it was
  }
  const bool bytes = name.size() > 2 && name.compare(name.size() - 2, 2, "|b") == 0;
  py::list rows(column.size());
  for (size_t r = 0; r < column.size() && !bytes; ++r) {
    const std::string_view row = column[r];
    PyObject* text = PyUnicode_DecodeUTF8(row.data(), static_cast<Py_ssize_t>(row.size()),
                                          nullptr);
    if (text == nullptr) {  // not UTF-8: the field's rows go as bytes
      PyErr_Clear();
      return text_rows(name + "|b", column);
    }
    PyList_SET_ITEM(rows.ptr(), static_cast<Py_ssize_t>(r), text);
  }
  for (size_t r = 0; r < column.size() && bytes; ++r) {
    const std::string_view row = column[r];
    rows[r] = py::bytes(row.data(), row.size());
  }
  return rows;
}

py::dict worker_stats_dict(const WorkerStats& w) {
  py::dict d;
  d["busy_ns"] = w.busy_ns;
  d["cpu_ns"] = w.cpu_ns;
  return d;
}

py::dict epoch_stats_dict(const EpochStats& e) {
  py::dict d;
  d["epoch"] = e.epoch;
  d["finished"] = e.finished;
  d["workers_running"] = e.workers_running;
  d["batches"] = e.batches;
  d["wall_ns"] = e.wall_ns;
  d["wait_ns"] = e.wait_ns;
  d["head_of_line_ns"] = e.head_of_line_ns;
  d["busy_ns"] = e.busy_ns;
  d["cpu_ns"] = e.cpu_ns;
  d["cpu_budget"] = e.cpu_budget;
  d["summary"] = e.summary;
  return d;
}

}  // namespace

void DrawnBatches::set_plan(uint64_t epoch, std::vector<std::vector<int64_t>> batches) {
  std::lock_guard<std::mutex> lock(mutex_);
  plans_[epoch] = std::move(batches);
  while (!plans_.empty() && plans_.begin()->first + 1 < epoch) plans_.erase(plans_.begin());
}

std::vector<std::vector<int64_t>> DrawnBatches::batches(size_t, uint64_t epoch) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = plans_.find(epoch);
  if (found == plans_.end()) {
    throw OptionError("epoch", "mploader: DataLoader: the loader was asked for epoch " +
                                   std::to_string(epoch) +
                                   ", whose batches were never drawn. Start each epoch by "
                                   "iterating the DataLoader (for batch in loader).");
  }
  return found->second;
}

PythonLoader::PythonLoader(py::object source, size_t size, const py::dict& options,
                           py::object worker_start) {
  LoaderOptions o = options_from(options);
  // Spawned workers build the dataset again from its recipe; LoaderOptions::worker_init
  // cannot reach them, so the dataset itself runs worker_start there.
  const bool spawned = o.start_method != StartMethod::kFork;
  if (!worker_start.is_none() && !spawned) {
    auto start = std::make_shared<HeldObject>(std::move(worker_start));
    o.worker_init = [start](const WorkerInfo& info) {
      py::gil_scoped_acquire gil;
      try {
        call_worker_start(start->get(), info);
      } catch (py::error_already_set& e) {
        throw_foreign(e);
      }
    };
  }
  std::shared_ptr<Dataset> dataset;
  if (py::isinstance<NativeDataset>(source)) {
    dataset = source.cast<const NativeDataset&>().dataset;
  } else {
    std::shared_ptr<PendingSamples> pending;
    if (options.contains("collate_fn")) {
      pending = std::make_shared<PendingSamples>();
      auto collator = std::make_shared<PythonCollator>(
          py::reinterpret_borrow<py::object>(options["collate_fn"]), pending);
      if (options.contains("collate_recipe")) {
        collator->set_recipe(options["collate_recipe"].cast<std::string>());
      }
      o.collate = std::move(collator);
    }
    auto python = std::make_shared<PythonDataset>(std::move(source), size, std::move(pending));
    if (options.contains("recipe")) {
      python->set_recipe(options["recipe"], options["recipe_fds"].cast<std::vector<int>>());
    }
    dataset = std::move(python);
  }
  if (dynamic_cast<StreamingDataset*>(dataset.get()) != nullptr) {
    // A stream plans its own epochs (shards shuffled and shared out among the workers).
    take(options, "batch_size", o.batch_size);
    take(options, "shuffle", o.shuffle);
    take(options, "drop_last", o.drop_last);
    take(options, "shuffle_buffer", o.shuffle_buffer);
  } else {
    batches_ = std::make_shared<DrawnBatches>(options["max_batch_size"].cast<size_t>());
    o.batch_sampler = batches_;
  }
  py::gil_scoped_release unlocked;  // starting workers forks, which takes the GIL
  loader_ = std::make_unique<Loader>(std::move(dataset), std::move(o));
}

PythonLoader::~PythonLoader() {
  py::gil_scoped_release unlocked;
  loader_.reset();
}

size_t PythonLoader::batches_per_epoch() const {
  py::gil_scoped_release unlocked;
  return loader_->batches_per_epoch();
}

void PythonLoader::set_plan(uint64_t epoch, const py::iterable& batches) {
  std::vector<std::vector<int64_t>> plan;
  for (py::handle batch : batches) {
    std::vector<int64_t> indices;
    for (py::handle index : py::reinterpret_borrow<py::iterable>(batch)) {
      // operator.index: an integer, never a float truncated to another sample
      // (mploader/_loader.py's checked_plan says which sampler gave one).
      auto integer = py::reinterpret_steal<py::object>(PyNumber_Index(index.ptr()));
      if (!integer) throw py::error_already_set();
      indices.push_back(integer.cast<int64_t>());
    }
    plan.push_back(std::move(indices));
  }
  batches_->set_plan(epoch, std::move(plan));
}

void PythonLoader::set_epoch(uint64_t epoch) {
  py::gil_scoped_release unlocked;
  loader_->set_epoch(epoch);
}

uint64_t PythonLoader::epoch() const { return loader_->epoch(); }

py::object PythonLoader::next(bool start) {
  std::optional<Batch> batch;
  {
    py::gil_scoped_release unlocked;  // a worker may be restarted (a fork) while we wait
    try {
      if (start) {
        Loader::Iterator first = loader_->begin();
        if (first != loader_->end()) batch = *first;
      } else {
        batch = loader_->next();
      }
    } catch (py::error_already_set&) {
      // A signal handler raised while we waited (Ctrl-C): the epoch cannot go on, and an
      // interrupted program must leave no worker behind. Stopped now, not when collected.
      loader_.reset();
      throw;
    }
  }
  if (!batch) return py::none();
  py::list tensors, texts;
  for (const auto& [name, tensor] : batch->tensors()) {
    tensors.append(py::make_tuple(name, tensor));
  }
  for (const auto& [name, column] : batch->texts()) {
    texts.append(py::make_tuple(name, text_rows(name, column)));
  }
  return py::make_tuple(tensors, texts, py::cast(batch->indices()), batch->worker_id());
}

std::string PythonLoader::state_dict() const { return loader_->state_dict(); }

void PythonLoader::load_state_dict(const std::string& state) {
  py::gil_scoped_release unlocked;
  loader_->load_state_dict(state);
}

py::dict PythonLoader::stats() const {
  const LoaderStats s = loader_->stats();
  py::dict d;
  d["batches"] = s.batches;
  d["wait_ns"] = s.wait_ns;
  d["head_of_line_ns"] = s.head_of_line_ns;
  d["skipped_samples"] = s.skipped_samples;
  d["memory_growth_warnings"] = s.memory_growth_warnings;
  d["workers_running"] = s.workers_running;
  d["prefetch_factor"] = s.prefetch_factor;
  py::list workers, epochs, quarantined;
  for (const WorkerStats& w : s.workers) workers.append(worker_stats_dict(w));
  for (const EpochStats& e : s.epochs) epochs.append(epoch_stats_dict(e));
  for (const QuarantinedSample& q : s.quarantined) {
    py::dict one;
    one["index"] = q.index;
    one["epoch"] = q.epoch;
    one["deaths"] = q.deaths;
    one["cause"] = q.cause;
    one["report_path"] = q.report_path;
    quarantined.append(one);
  }
  d["quarantined"] = quarantined;
  d["workers"] = workers;
  d["epochs"] = epochs;
  return d;
}

std::vector<int> PythonLoader::worker_pids() const { return loader_->worker_pids(); }

}  // namespace mploader::python
