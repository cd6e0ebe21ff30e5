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
  std::vector<uint64_t> offsets;
  std::vector<uint64_t> nbytes;
  uint64_t total_bytes = 0;
};

// Computes offsets. Returns an error message (empty on success) when the layout cannot be
// described in a slot's tensor table: too many tensors, dimensions or too long a name.
std::string plan_batch(std::vector<TensorLayout> layout, PlannedBatch& out);

// Non-owning tensors over `base`, one per planned tensor. `base` must outlive them.
std::vector<at::Tensor> views_into(uint8_t* base, const PlannedBatch& plan);

// Writes the tensor table of `plan` into a descriptor.
void write_tensor_table(const PlannedBatch& plan, ipc::TaskDescriptor& descriptor);

}  // namespace mploader::detail
