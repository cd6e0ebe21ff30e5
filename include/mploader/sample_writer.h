/// @file
/// Writing samples in place: a dataset that declares the layout of its samples up front writes
/// each one straight into its row of the batch (a ring slot in shared memory under workers, the
/// batch's own memory with num_workers = 0), so every byte of a batch is written once, with no
/// sample tensor to allocate and no copy to collate it. See Dataset::sample_layout().
#pragma once

#include <mploader/tensor_dict.h>

#include <c10/core/ScalarType.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mploader {

/// One named tensor of every sample: its element type and its shape in one sample (no batch
/// dimension).
struct FieldLayout {
  std::string name;            ///< The tensor's name in the sample and in the batch.
  at::ScalarType dtype;        ///< Its element type.
  std::vector<int64_t> shape;  ///< Its shape in one sample; {} for a scalar.
  /// Bytes of one sample's tensor: the product of shape times the element size.
  size_t nbytes() const;
};

/// The tensors of every sample, in the order they appear in the batch.
using SampleLayout = std::vector<FieldLayout>;

/// The layout of `sample` (names, dtypes and shapes, in order): for a dataset that declares its
/// layout from its first sample, `return layout_of(get(0));` once, then keeps it.
SampleLayout layout_of(const Sample& sample);

/// What SampleWriter and BatchWriter share: the fields that sample_layout() declares, and the
/// memory of each, handed out by index or by name.
///
/// Every field must be written: a field that the dataset never asks for (through bytes(),
/// data(), tensor() or SampleWriter::copy()) would leave an earlier batch's bytes in the slot,
/// so it fails the batch with a WorkerError naming the field instead. Asking for a field counts
/// as writing all of it; a dataset that writes only part of the memory it asked for is not
/// caught. The memory is valid only during the call. Not thread-safe.
class FieldWriter {
 public:
  /// The fields, in the order sample_layout() declared them.
  size_t num_fields() const { return layout_->size(); }
  const FieldLayout& field(size_t k) const { return (*layout_)[k]; }  ///< Field `k`.
  /// The position of field `name`; throws OptionError("name", ...) naming the declared fields.
  size_t index_of(std::string_view name) const;

  /// Field k's memory, C-contiguous: field(k).nbytes() bytes for one sample (SampleWriter),
  /// rows() times that for a batch (BatchWriter).
  void* bytes(size_t k);
  /// Field k's memory as T; throws OptionError("T", ...) when T is not the field's dtype.
  template <typename T>
  T* data(size_t k) {
    check_dtype(k, c10::CppTypeToScalarType<T>::value);
    return static_cast<T*>(bytes(k));
  }
  /// data<T>(index_of(name)).
  template <typename T>
  T* data(std::string_view name) {
    return data<T>(index_of(name));
  }
  /// Field k as a tensor over its memory, for libtorch ops that write into a given tensor
  /// (copy_, index_select_out and the like): the field's shape for a sample, [rows(), shape...]
  /// for a batch. Costs one tensor; bytes() and data() cost none.
  at::Tensor tensor(size_t k);
  at::Tensor tensor(std::string_view name) { return tensor(index_of(name)); }  ///< By name.

  /// For mploader: throws Error naming the fields not written, if any.
  void check_complete() const;

 protected:
  /// Field k of the memory starts at bases[k] + row * field_bytes[k]; batch_rows is -1 for one
  /// sample (no batch dimension in tensor()), else the rows of a batch. `unit` names a field in
  /// check_complete()'s message.
  FieldWriter(const SampleLayout& layout, uint8_t* const* bases, const size_t* field_bytes,
              size_t row, int64_t batch_rows, const char* unit);
  /// Throws OptionError("field", ...) unless field k is declared.
  void check_field(size_t k) const;
  /// Throws OptionError("T", ...), naming the field, unless its dtype is `wanted`.
  void check_dtype(size_t k, at::ScalarType wanted) const;
  /// Every field counts as written (its rows were, by writers of their own).
  void mark_all_written();

  const SampleLayout* layout_;  ///< The declared fields.
  uint8_t* const* bases_;       ///< Where each field's memory starts.
  const size_t* field_bytes_;   ///< One sample's bytes of each field.

 private:
  size_t row_;
  int64_t batch_rows_;
  const char* unit_;
  uint64_t written_ = 0;  // bit k: field k was handed out (at most 64 fields: the tensor table's)
};

/// Where Dataset::write puts one sample: for each field of the dataset's sample_layout(),
/// exactly field(k).nbytes() writable bytes, C-contiguous, in that field's dtype. The rules of
/// FieldWriter hold: every field must be asked for. mploader makes one per sample.
class SampleWriter : public FieldWriter {
 public:
  /// Copies `value` into field k. Throws OptionError("value", ...), with both shapes and dtypes,
  /// unless `value` has exactly the field's dtype and shape (any strides).
  void copy(size_t k, const at::Tensor& value);
  /// copy(index_of(name), value).
  void copy(std::string_view name, const at::Tensor& value) { copy(index_of(name), value); }

  /// For mploader: a writer of row `row` of a batch whose field k starts at bases[k] (each
  /// pointer array outlives the writer).
  SampleWriter(const SampleLayout& layout, uint8_t* const* bases, const size_t* field_bytes,
               size_t row);
};

/// Where Dataset::write_batch puts a whole batch: field k is one C-contiguous block of
/// rows() x field(k).nbytes() bytes, shape [rows(), field(k).shape...], rows in the order of
/// the indices. The rules of FieldWriter hold: every field must be asked for.
class BatchWriter : public FieldWriter {
 public:
  size_t rows() const { return rows_; }  ///< The samples in the batch.

  /// For mploader: a writer of a batch of `rows` samples whose field k starts at bases[k].
  BatchWriter(const SampleLayout& layout, uint8_t* const* bases, const size_t* field_bytes,
              size_t rows);

 private:
  friend class Dataset;  // its default write_batch() writes row by row
  // Before row r is written: false when the batch is no longer wanted.
  using RowHook = bool (*)(void* context, size_t row);

 public:
  /// For mploader: called before each row the default write_batch() writes, and with the row
  /// that failed when it throws (rows() while none is being written).
  void on_row(RowHook hook, void* context) {
    hook_ = hook;
    hook_context_ = context;
  }
  size_t current_row() const { return current_row_; }  ///< For mploader: see on_row().

 private:
  SampleWriter row(size_t r) const { return SampleWriter(*layout_, bases_, field_bytes_, r); }

  size_t rows_;
  RowHook hook_ = nullptr;
  void* hook_context_ = nullptr;
  size_t current_row_;
};

}  // namespace mploader
