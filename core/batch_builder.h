// Builds public Batch objects: views over memory a batch was assembled into (a worker's slot or
// segment, read back through its tensor table; or the in-process path's own memory), or
// tensors made in this process (DevicePrefetcher).
#pragma once

#include "core/batch_plan.h"
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
  // Tensors that view `base` where `plan` put them; `keep_alive` as above.
  static Batch from_plan(const PlannedBatch& plan, uint8_t* base,
                         std::shared_ptr<void> keep_alive, std::vector<int64_t> indices,
                         uint64_t epoch, uint64_t sequence, int worker_id);
  // The text columns of `from` into `to` (DevicePrefetcher: text stays in host memory).
  static void copy_texts(const Batch& from, Batch& to);
  static Batch from_tensors(TensorDict tensors, std::vector<int64_t> indices, uint64_t epoch,
                            uint64_t sequence, int worker_id);
};

}  // namespace mploader::detail
