/// @file
/// Large read-only arrays shared, not copied: .npy files mapped read-only. Every process that
/// maps the same file (all workers of all loaders, other jobs on the machine) shares its pages
/// through the page cache, so a dataset over them costs a worker no private memory however
/// large the data, and does not grow over an epoch.
#pragma once

#include <mploader/dataset.h>

#include <c10/core/ScalarType.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace mploader {

/// One .npy array (format versions 1 to 3; C order; little-endian or single-byte elements of
/// types bool, uint8, int8, int16, int32, int64, float16, float32, float64), mapped read-only.
/// Thread-safe to read; the tensors it returns view the mapping and keep it alive, and must not
/// be written to.
class NpyArray {
 public:
  /// Throws mploader::Error naming the file and what is wrong with it (missing, truncated, not
  /// a .npy file, an unsupported dtype or Fortran order).
  explicit NpyArray(const std::string& path);

  const std::string& path() const { return path_; }  ///< The file mapped.
  at::ScalarType dtype() const { return dtype_; }  ///< Its element type.
  const std::vector<int64_t>& shape() const { return shape_; }  ///< Its shape.
  /// The length of the first dimension.
  int64_t rows() const { return shape_.empty() ? 1 : shape_[0]; }
  /// Row `i` (shape()[1:]) as a view of the mapping: no copy. Throws OptionError("i", ...) for
  /// a row outside the array.
  at::Tensor row(int64_t i) const;
  /// The whole array as a view of the mapping.
  at::Tensor tensor() const;
  /// Bytes of one row (shape()[1:]).
  uint64_t row_bytes() const { return row_bytes_; }
  /// Copies row `i` into `out` (row_bytes() bytes): the one read of an in-place write. Throws
  /// OptionError("i", ...) for a row outside the array.
  void copy_row(int64_t i, void* out) const;

 private:
  std::string path_;
  at::ScalarType dtype_;
  std::vector<int64_t> shape_;
  std::shared_ptr<const void> mapping_;  // the mmap; unmapped with its last user
  const uint8_t* data_ = nullptr;
  uint64_t row_bytes_ = 0;
};

/// Sample i holds row i of each named array; all arrays must have the same number of rows.
class NpyDataset : public Dataset {
 public:
  /// (name, path) pairs, e.g. {{"image", "train_images.npy"}, {"label", "train_labels.npy"}}.
  explicit NpyDataset(const std::vector<std::pair<std::string, std::string>>& arrays);
  size_t size() const override { return rows_; }
  /// Views of the mapping (no copy); the batch then copies them once.
  Sample get(int64_t index) override;
  /// One field per array, in the order given: each array's dtype and row shape.
  std::optional<SampleLayout> sample_layout() const override;
  /// Copies each array's row straight from the mapping into the batch: one copy in all.
  void write(int64_t index, SampleWriter& out) override;
  /// Gathers every array's rows for the batch at once.
  void write_batch(const int64_t* indices, size_t count, BatchWriter& out) override;

 private:
  std::vector<std::pair<std::string, NpyArray>> arrays_;
  size_t rows_ = 0;
};

}  // namespace mploader
