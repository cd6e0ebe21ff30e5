// mploader.tune(): the engine's sweep of num_workers (and prefetch_factor, batch size) over
// the user's dataset, a Python Dataset or one of mploader's readers, from Python.
#include "native_dataset.h"
#include "python_dataset.h"

#include <mploader/tune.h>

#include <chrono>

namespace mploader::python {
namespace {

py::dict point_dict(const TunePoint& p) {
  py::dict d;
  d["workers"] = p.workers;
  d["prefetch"] = p.prefetch;
  d["batch_size"] = p.batch_size;
  d["batches"] = p.batches;
  d["samples_per_s"] = p.samples_per_s;
  d["utilisation"] = p.utilisation;
  d["busy_ms_per_batch"] = p.busy_ms_per_batch;
  d["wait_p50_ms"] = p.wait_p50_ms;
  d["on_cpu"] = p.on_cpu;
  return d;
}

py::dict choice_dict(const TuneChoice& c) {
  py::dict d;
  d["num_workers"] = c.workers;
  d["prefetch_factor"] = c.prefetch;
  d["batch_size"] = c.batch_size;
  d["samples_per_s"] = c.samples_per_s;
  d["best_num_workers"] = c.best_workers;
  d["best_samples_per_s"] = c.best_samples_per_s;
  d["bound"] = c.bound;
  d["reason"] = c.reason;
  d["budget_note"] = c.budget_note;
  return d;
}

TuneOptions tune_options(py::kwargs kwargs) {
  Keywords k(std::move(kwargs), "tune");
  TuneOptions t;
  k.take("workers", t.workers);
  k.take("prefetch", t.prefetch);
  k.take("batch_sizes", t.batch_sizes);
  k.take("batches_per_point", t.batches_per_point);
  if (k.has("time_budget_s")) {
    t.time_budget = std::chrono::milliseconds(
        static_cast<int64_t>(k.get("time_budget_s").cast<double>() * 1000));
  }
  k.check_all_used();
  return t;
}

// `source`: a NativeDataset, or fetch(index) giving a Python sample's leaves.
py::dict tune_dataset(py::object source, size_t size, int64_t batch_size, bool shuffle,
                      py::kwargs kwargs) {
  std::shared_ptr<Dataset> dataset;
  if (py::isinstance<NativeDataset>(source)) {
    dataset = source.cast<const NativeDataset&>().dataset;
  } else {
    dataset = std::make_shared<PythonDataset>(std::move(source), size, nullptr);
  }
  const TuneOptions t = tune_options(std::move(kwargs));
  LoaderOptions base;
  base.batch_size = batch_size;
  base.shuffle = shuffle;
  TuneResult result;
  {
    py::gil_scoped_release unlocked;  // every point starts workers: forks take the GIL
    result = tune([&] { return dataset; }, base, t);
  }
  py::dict out;
  py::list table, choices;
  for (const TunePoint& p : result.table) table.append(point_dict(p));
  for (const TuneChoice& c : result.choices) choices.append(choice_dict(c));
  out["table"] = table;
  out["choices"] = choices;
  out["recommendation"] = choice_dict(result.recommendation);
  out["cpu_budget"] = result.cpu_budget.cpus;
  out["skipped"] = py::cast(result.skipped);
  out["summary"] = result.summary();
  return out;
}

}  // namespace

void bind_tune(py::module_& m) {
  m.def("tune", &tune_dataset, py::arg("source"), py::arg("size"), py::arg("batch_size"),
        py::arg("shuffle"));
}

}  // namespace mploader::python
