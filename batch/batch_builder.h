// Builds public Batch objects: from a worker's tensor table over shared memory (zero copy), or
// from tensors made in this process.
#pragma once

#include "ipc/region_layout.h"

#include <mploader/batch.h>

#include <memory>
#include <vector>

namespace mploader::detail {

class BatchBuilder {
 public:
  // Tensors that view `base` at the offsets in `d`'s tensor table. `keep_alive` is destroyed
  // with the last of them. Throws mploader::Error when the table does not fit `capacity`
  // (a worker that wrote garbage must not make us read outside the mapping).
  static Batch from_table(const ipc::TaskDescriptor& d, uint8_t* base, uint64_t capacity,
                          std::shared_ptr<void> keep_alive, std::vector<int64_t> indices,
                          int worker_id);
  static Batch from_tensors(TensorDict tensors, std::vector<int64_t> indices, uint64_t epoch,
                            uint64_t sequence, int worker_id);
};

}  // namespace mploader::detail
