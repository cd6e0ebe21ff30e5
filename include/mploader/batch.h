/// @file
/// Batch: one collated batch as tensors that view shared memory directly (no copy). The memory
/// goes back to its worker when the Batch and every tensor taken from it are destroyed, so a
/// training loop may keep a batch, or any of its tensors, as long as it likes.
///
/// A batch's text fields (Sample::set_text) are TextColumns: row i's bytes as a
/// std::string_view of the same shared memory, valid while the Batch or the column lives.
///
/// Copying a Batch is cheap (tensor handles). Safe to move to and destroy on any thread.
#pragma once

#include <mploader/tensor_dict.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mploader {

namespace detail {
class BatchBuilder;
}

/// One text field of a batch: the rows' bytes concatenated (uint8 [total]) and where each row
/// starts (int64 [rows + 1]; row i is [offsets[i], offsets[i+1])). Both tensors view the
/// batch's shared memory and hold its slot, so the string_views operator[] returns stay valid
/// while this column (or a copy, or either tensor) lives. Read-only use from any thread is safe.
class TextColumn {
 public:
  TextColumn() = default;  ///< No rows.
  /// A column over `bytes` (uint8, 1-D) and `offsets` (int64, [rows + 1], non-decreasing, from
  /// 0 to bytes.numel()); throws OptionError("offsets", ...) when they are not that.
  TextColumn(at::Tensor bytes, at::Tensor offsets);
  /// Number of rows (the batch size).
  size_t size() const { return rows_; }
  /// Row `row`'s bytes; throws OptionError("row", ...) when row >= size().
  std::string_view operator[](size_t row) const;
  /// Every row as its own std::string (copies).
  std::vector<std::string> to_strings() const;
  /// The rows' bytes, concatenated: uint8 [total bytes].
  const at::Tensor& bytes() const { return bytes_; }
  /// Where each row starts in bytes(): int64 [size() + 1], the last one the total.
  const at::Tensor& offsets() const { return offsets_; }

 private:
  at::Tensor bytes_;
  at::Tensor offsets_;
  const char* data_ = nullptr;
  const int64_t* starts_ = nullptr;
  size_t rows_ = 0;
};

/// One batch from a Loader: named tensors viewing a shared-memory slot, and where they came
/// from. Copies share the tensors; any thread may move or destroy one.
class Batch {
 public:
  /// The tensor called `name`; throws OptionError("name", ...) naming it and the names there
  /// are.
  const at::Tensor& operator[](std::string_view name) const;
  /// Every tensor, by name.
  const TensorDict& tensors() const { return tensors_; }
  /// The text field called `name`, one string_view per sample: `batch.text("id")[i]`. Throws
  /// OptionError("name", ...) naming it and the text fields there are.
  const TextColumn& text(std::string_view name) const;
  /// Every text field, by name, in the samples' order.
  const std::vector<std::pair<std::string, TextColumn>>& texts() const { return texts_; }
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
  std::vector<std::pair<std::string, TextColumn>> texts_;
  std::vector<int64_t> indices_;
  uint64_t epoch_ = 0;
  uint64_t sequence_ = 0;
  int worker_id_ = -1;
};

}  // namespace mploader
