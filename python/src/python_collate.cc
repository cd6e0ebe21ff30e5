#include "python_collate.h"

#include "python_dataset.h"

#include <mploader/errors.h>

#include <torch/csrc/autograd/python_variable.h>

#include <ATen/ops/scalar_tensor.h>

#include <string>

namespace mploader::python {
namespace {

constexpr const char* kKeyName = "mploader.python_sample";

}  // namespace

PendingSamples::~PendingSamples() {
  if (!Py_IsInitialized()) {
    for (auto& [key, object] : kept_) object.release();
    return;
  }
  py::gil_scoped_acquire gil;
  kept_.clear();
}

Sample PendingSamples::keep(py::object sample) {
  const int64_t key = next_key_++;
  kept_.emplace(key, std::move(sample));
  return {{kKeyName, at::scalar_tensor(key, at::kLong)}};
}

py::list PendingSamples::take(const std::vector<Sample>& samples) {
  py::list objects;
  for (const Sample& sample : samples) {
    auto found = kept_.find(sample[kKeyName].item<int64_t>());
    if (found == kept_.end()) {
      throw Error("mploader: collate_fn: a sample of this batch was not kept for it (an "
                  "internal error). Report it with the program that shows it.");
    }
    objects.append(found->second);
  }
  kept_.clear();
  return objects;
}

std::optional<std::string> PythonCollator::recipe() const {
  if (recipe_.empty()) return std::nullopt;
  return "mploader.python_collate\n" + recipe_;
}

PythonCollator::PythonCollator(py::object collate, std::shared_ptr<PendingSamples> pending)
    : collate_(std::move(collate)), pending_(std::move(pending)) {}

std::vector<TensorLayout> PythonCollator::layout(const std::vector<Sample>& samples) {
  py::gil_scoped_acquire gil;
  collated_.clear();
  std::vector<TensorLayout> layout;
  try {
    py::list leaves = collate_.get()(pending_->take(samples));
    for (py::handle item : leaves) {
      auto pair = item.cast<py::tuple>();
      at::Tensor tensor = THPVariable_Unpack(pair[1].ptr());
      layout.push_back({pair[0].cast<std::string>(), tensor.scalar_type(), tensor.sizes().vec()});
      collated_.emplace_back(layout.back().name, std::move(tensor));
    }
  } catch (py::error_already_set& e) {
    throw_foreign(e);
  }
  return layout;
}

void PythonCollator::fill(const std::vector<Sample>&, std::vector<at::Tensor>& outputs) {
  for (size_t k = 0; k < outputs.size() && k < collated_.size(); ++k) {
    outputs[k].copy_(collated_[k].second);
  }
  py::gil_scoped_acquire gil;  // the tensors may be the last references to Python objects
  collated_.clear();
}

}  // namespace mploader::python
