// Reading values out of a decoded row group's Arrow arrays: rows of numbers into tensor memory,
// strings and binary as byte views, lists as tensors, image bytes. Dictionaries are looked
// through per row; nulls are reported to the caller, which knows the column's policy.
#pragma once

#include <arrow/type_fwd.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <memory>
#include <string_view>

namespace mploader::parquet::detail {

/// One column of a decoded row group.
struct ColumnData {
  std::shared_ptr<arrow::Array> array;   ///< The row group's column, in one chunk.
  const arrow::Array* values = nullptr;  ///< Its dictionary's values, or `array` itself.
  bool dictionary = false;               ///< Rows are indices into `values`.
  bool has_nulls = false;                ///< A row or an element may be null.
};

/// `array` (one chunk) ready for reading.
ColumnData column_data(std::shared_ptr<arrow::Array> array);

/// The row of `c.values` that row `row` of the column reads, or -1 when the row is null.
int64_t value_row(const ColumnData& c, int64_t row);

/// Where the elements of a tensor column's row lie: `count` elements from `start` of `leaf`
/// (fixed-size lists descended).
struct LeafRange {
  const arrow::Array* leaf = nullptr;
  int64_t start = 0;
  int64_t count = 0;
};
/// The elements of `rows` consecutive rows from `row` of `values`.
LeafRange leaf_range(const arrow::Array& values, int64_t row, int64_t rows);

/// Copies a range's elements into `dst` as `dtype` (the column's: leaf_dtype of the leaf).
/// A null element becomes `*fill`; with `fill` null, returns false at the first null element,
/// having written part of `dst`.
bool copy_elements(const LeafRange& range, at::ScalarType dtype, const double* fill,
                   uint8_t* dst);

/// Writes `count` elements of `value` as `dtype` into `dst`.
void fill_elements(at::ScalarType dtype, double value, int64_t count, uint8_t* dst);

/// Row `row` of a string, binary or fixed-size binary array.
std::string_view text_view(const arrow::Array& values, int64_t row);

/// The elements of row `row` of a list array (its child's range).
LeafRange list_range(const arrow::Array& values, int64_t row);

/// The encoded bytes of row `row` of an image column (binary, or a struct with a "bytes"
/// child); false when they are null.
bool image_bytes(const arrow::Array& values, int64_t row, std::string_view& out);

}  // namespace mploader::parquet::detail
