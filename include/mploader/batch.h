/// @file
/// Batch: one collated batch as tensors that view shared memory directly (no copy). The memory
/// goes back to its worker when the Batch and every tensor taken from it are destroyed, so a
/// training loop may keep a batch, or any of its tensors, as long as it likes.
///
/// Copying a Batch is cheap (tensor handles). Safe to move to and destroy on any thread.
#pragma once

#include <mploader/tensor_dict.h>

#include <cstdint>
#include <string_view>
#include <vector>

namespace mploader {

namespace detail {
class BatchBuilder;
}

/// One batch from a Loader: named tensors viewing a shared-memory slot, and where they came
/// from. Copies share the tensors; any thread may move or destroy one.
class Batch {
 public:
  /// The tensor called `name`; throws std::out_of_range naming it and the names there are.
  const at::Tensor& operator[](std::string_view name) const { return tensors_[name]; }
  /// Every tensor, by name.
  const TensorDict& tensors() const { return tensors_; }
  /// Dataset indices of the samples, in batch order.
  const std::vector<int64_t>& indices() const { return indices_; }
  /// Samples in the batch.
  size_t size() const { return indices_.size(); }
  /// The epoch it belongs to.
  uint64_t epoch() const { return epoch_; }
  /// Position of the batch in its epoch's sampler order.
  uint64_t sequence() const { return sequence_; }
  /// The worker that built it; -1 when num_workers == 0.
  int worker_id() const { return worker_id_; }

 private:
  friend class detail::BatchBuilder;
  TensorDict tensors_;
  std::vector<int64_t> indices_;
  uint64_t epoch_ = 0;
  uint64_t sequence_ = 0;
  int worker_id_ = -1;
};

}  // namespace mploader
