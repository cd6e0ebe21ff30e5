// Placing a collated batch into raw memory: 64-byte aligned offsets for each tensor, tensor
// views over that memory for the collator to fill, and the tensor table the main process
// reads back. Used by workers (slots and overflow segments) and by the in-process path.
#pragma once

#include "ipc/region_layout.h"

#include <mploader/collate.h>

#include <string>
#include <vector>

namespace mploader::detail {

struct PlannedBatch {
  std::vector<TensorLayout> layout;
  // What each entry holds: the collator's tensors first, then two entries per text field
  // (core/text_fields.h).
  std::vector<ipc::FieldKind> kinds;
  std::vector<uint64_t> offsets;
  std::vector<uint64_t> nbytes;
  uint64_t total_bytes = 0;
};

// Computes offsets. Returns an error message (empty on success) when the layout cannot be
// described in a slot's tensor table: too many tensors, dimensions or too long a name.
// `kinds`: one per entry of `layout`; empty means every entry is a tensor.
std::string plan_batch(std::vector<TensorLayout> layout, PlannedBatch& out,
                       std::vector<ipc::FieldKind> kinds = {});

// Non-owning tensors over `base`, one per planned tensor (the text fields' entries left out:
// the collator fills these). `base` must outlive them.
std::vector<at::Tensor> views_into(uint8_t* base, const PlannedBatch& plan);

// Writes the tensor table of `plan` into a descriptor.
void write_tensor_table(const PlannedBatch& plan, ipc::TaskDescriptor& descriptor);

}  // namespace mploader::detail
