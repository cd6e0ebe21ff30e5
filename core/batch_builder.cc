#include "core/batch_builder.h"

#include "core/text_fields.h"

#include <mploader/errors.h>

#include <ATen/ATen.h>

#include <cstring>

namespace mploader::detail {
namespace {

[[noreturn]] void throw_corrupt_table(int worker_id) {
  throw Error("mploader: worker " + std::to_string(worker_id) +
              " published a corrupt tensor table; this is a bug in mploader or memory "
              "corruption in dataset code");
}

// A text field's two entries: int64 offsets [B+1] then uint8 bytes [total], of one name.
bool text_pair_ok(const ipc::TensorMeta& offsets, const ipc::TensorMeta& bytes) {
  return offsets.kind == static_cast<uint32_t>(ipc::FieldKind::kTextOffsets) &&
         bytes.kind == static_cast<uint32_t>(ipc::FieldKind::kTextBytes) &&
         offsets.dtype == static_cast<int32_t>(at::kLong) && offsets.ndim == 1 &&
         offsets.shape[0] >= 1 && bytes.dtype == static_cast<int32_t>(at::kByte) &&
         bytes.ndim == 1 && strncmp(offsets.name, bytes.name, sizeof offsets.name) == 0;
}

void check_meta(const ipc::TensorMeta& m, uint64_t capacity, int worker_id) {
  bool ok = m.kind <= static_cast<uint32_t>(ipc::FieldKind::kTextBytes) && m.ndim >= 0 &&
            m.ndim <= static_cast<int32_t>(ipc::kMaxDims) && m.dtype >= 0 &&
            m.dtype < static_cast<int32_t>(c10::ScalarType::NumOptions) &&
            m.offset % ipc::kPayloadAlign == 0 && m.offset <= capacity &&
            m.nbytes <= capacity - m.offset;
  if (ok) {
    uint64_t elements = 1;
    for (int32_t k = 0; k < m.ndim; ++k) elements *= static_cast<uint64_t>(m.shape[k]);
    ok = elements * c10::elementSize(static_cast<c10::ScalarType>(m.dtype)) == m.nbytes;
  }
  if (!ok) throw_corrupt_table(worker_id);
}

// The plan a worker's tensor table describes, checked against the memory it claims.
PlannedBatch plan_from_table(const ipc::TaskDescriptor& d, uint64_t capacity, int worker_id) {
  if (d.num_tensors > ipc::kMaxTensors) check_meta(ipc::TensorMeta{}, 0, worker_id);
  PlannedBatch plan;
  for (uint32_t i = 0; i < d.num_tensors; ++i) {
    const ipc::TensorMeta& m = d.tensors[i];
    check_meta(m, capacity, worker_id);
    const auto kind = static_cast<ipc::FieldKind>(m.kind);
    // Text entries come in pairs after every tensor (core/text_fields.h).
    if (kind == ipc::FieldKind::kTextOffsets &&
        (i + 1 >= d.num_tensors || !text_pair_ok(m, d.tensors[i + 1]))) {
      throw_corrupt_table(worker_id);
    }
    if ((kind == ipc::FieldKind::kTextBytes &&
         (i == 0 || plan.kinds.back() != ipc::FieldKind::kTextOffsets)) ||
        (kind == ipc::FieldKind::kTensor && !plan.kinds.empty() &&
         plan.kinds.back() != ipc::FieldKind::kTensor)) {
      throw_corrupt_table(worker_id);
    }
    plan.kinds.push_back(kind);
    plan.layout.push_back(TensorLayout{std::string(m.name, strnlen(m.name, sizeof m.name)),
                                       static_cast<c10::ScalarType>(m.dtype),
                                       std::vector<int64_t>(m.shape, m.shape + m.ndim)});
    plan.offsets.push_back(m.offset);
    plan.nbytes.push_back(m.nbytes);
  }
  plan.total_bytes = d.batch_bytes;
  return plan;
}

}  // namespace

Batch BatchBuilder::from_table(const ipc::TaskDescriptor& d, uint8_t* base, uint64_t capacity,
                               std::shared_ptr<void> keep_alive, std::vector<int64_t> indices,
                               int worker_id) {
  PlannedBatch plan = plan_from_table(d, capacity, worker_id);
  try {
    return from_plan(plan, base, std::move(keep_alive), std::move(indices), d.epoch, d.sequence,
                     worker_id);
  } catch (const OptionError&) {
    throw_corrupt_table(worker_id);  // a text column's offsets do not fit its bytes
  }
}

Batch BatchBuilder::from_plan(const PlannedBatch& plan, uint8_t* base,
                              std::shared_ptr<void> keep_alive, std::vector<int64_t> indices,
                              uint64_t epoch, uint64_t sequence, int worker_id) {
  TensorDict tensors;
  for (size_t i = 0; i < plan.layout.size(); ++i) {
    if (plan.kinds[i] != ipc::FieldKind::kTensor) continue;
    const TensorLayout& t = plan.layout[i];
    tensors.set(t.name, at::from_blob(base + plan.offsets[i], t.shape,
                                      [keep_alive](void*) {}, at::TensorOptions().dtype(t.dtype)));
  }
  Batch b = from_tensors(std::move(tensors), std::move(indices), epoch, sequence, worker_id);
  b.texts_ = text_columns(plan, base, keep_alive);
  return b;
}

void BatchBuilder::copy_texts(const Batch& from, Batch& to) { to.texts_ = from.texts_; }

Batch BatchBuilder::from_tensors(TensorDict tensors, std::vector<int64_t> indices,
                                 uint64_t epoch, uint64_t sequence, int worker_id) {
  Batch b;
  b.tensors_ = std::move(tensors);
  b.indices_ = std::move(indices);
  b.epoch_ = epoch;
  b.sequence_ = sequence;
  b.worker_id_ = worker_id;
  return b;
}

}  // namespace mploader::detail
