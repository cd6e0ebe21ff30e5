#include "core/batch_plan.h"

#include <ATen/ATen.h>

namespace mploader::detail {

std::string plan_batch(std::vector<TensorLayout> layout, PlannedBatch& out,
                       std::vector<ipc::FieldKind> kinds) {
  if (layout.size() > ipc::kMaxTensors) {
    return "a batch may hold at most " + std::to_string(ipc::kMaxTensors) +
           " tensors (a text field counts as two); the collator produced " +
           std::to_string(layout.size()) + ". Fix: stack related fields into one tensor per sample";
  }
  out = PlannedBatch{};
  if (kinds.empty()) kinds.assign(layout.size(), ipc::FieldKind::kTensor);
  out.kinds = std::move(kinds);
  uint64_t offset = 0;
  for (const TensorLayout& t : layout) {
    if (t.name.size() >= ipc::kNameBytes) {
      return "tensor name '" + t.name + "' has " + std::to_string(t.name.size()) +
             " characters; at most " + std::to_string(ipc::kNameBytes - 1) +
             " are supported. Fix: use a shorter name";
    }
    if (t.shape.size() > ipc::kMaxDims) {
      return "tensor '" + t.name + "' has " + std::to_string(t.shape.size()) +
             " dimensions in the batch (its samples " + std::to_string(t.shape.size() - 1) +
             "); at most " + std::to_string(ipc::kMaxDims) +
             " are supported. Fix: reshape the sample to fewer dimensions (flatten the last "
             "ones) and view it back after loading";
    }
    uint64_t elements = 1;
    for (int64_t d : t.shape) {
      if (d < 0) return "tensor '" + t.name + "' has a negative dimension";
      elements *= static_cast<uint64_t>(d);
    }
    const uint64_t bytes = elements * c10::elementSize(t.dtype);
    offset = ipc::align_up(offset, ipc::kPayloadAlign);
    out.offsets.push_back(offset);
    out.nbytes.push_back(bytes);
    offset += bytes;
  }
  out.total_bytes = ipc::align_up(offset, ipc::kPayloadAlign);
  out.layout = std::move(layout);
  return {};
}

std::vector<at::Tensor> views_into(uint8_t* base, const PlannedBatch& plan) {
  std::vector<at::Tensor> views;
  views.reserve(plan.layout.size());
  for (size_t i = 0; i < plan.layout.size(); ++i) {
    if (plan.kinds[i] != ipc::FieldKind::kTensor) continue;
    const TensorLayout& t = plan.layout[i];
    views.push_back(at::from_blob(base + plan.offsets[i], t.shape,
                                  at::TensorOptions().dtype(t.dtype)));
  }
  return views;
}

void write_tensor_table(const PlannedBatch& plan, ipc::TaskDescriptor& d) {
  d.num_tensors = static_cast<uint32_t>(plan.layout.size());
  for (size_t i = 0; i < plan.layout.size(); ++i) {
    const TensorLayout& t = plan.layout[i];
    ipc::TensorMeta& m = d.tensors[i];
    ipc::copy_text(m.name, sizeof m.name, t.name.c_str());
    m.dtype = static_cast<int32_t>(t.dtype);
    m.ndim = static_cast<int32_t>(t.shape.size());
    m.kind = static_cast<uint32_t>(plan.kinds[i]);
    for (size_t k = 0; k < t.shape.size(); ++k) m.shape[k] = t.shape[k];
    m.offset = plan.offsets[i];
    m.nbytes = plan.nbytes[i];
  }
  d.batch_bytes = plan.total_bytes;
}

}  // namespace mploader::detail
