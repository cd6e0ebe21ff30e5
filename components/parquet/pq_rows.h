// A column's rows into a sample or a batch, under the column's null policy: tensors and masks
// into their memory, images decoded there, lists and text for get().
#pragma once

#include "parquet/pq_values.h"

#include <mploader/parquet/parquet_shards.h>
#include <mploader/vision/decode.h>

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string_view>

namespace mploader::parquet::detail {

/// Where rows lie, for messages and for the seeds of random image transforms.
struct RowPlace {
  const ParquetFileInfo* file = nullptr;
  int group = 0;        ///< The row group in the file.
  int64_t row = 0;      ///< The first row, in the row group.
  int64_t global = 0;   ///< Its global index in the dataset.
};

/// The decoder and buffers image rows reuse.
struct ImageState {
  vision::ImageDecoder& decoder;
  vision::RgbImage& image;
  vision::RenderScratch& scratch;
};

/// Writes `rows` rows of tensor column `c` from `at` into `dst` (C-contiguous rows of
/// info.shape), and each row's validity into `mask` (one bool a row) when it is not null.
/// Throws mploader::Error naming the place when a null meets NullPolicy::kRefuse.
void write_tensor_rows(const ColumnData& c, const ParquetColumnInfo& info, double fill,
                       const RowPlace& at, int64_t rows, uint8_t* dst, uint8_t* mask);

/// Decodes row `at` of image column `c` through `compose` into `dst` (info.shape, info.dtype).
/// Throws mploader::Error naming the place for a null or an image that does not decode.
void write_image_row(const ColumnData& c, const ParquetColumnInfo& info,
                     const vision::Compose& compose, const RowPlace& at, uint64_t seed,
                     ImageState state, uint8_t* dst);

/// Row `at` of list column `c` as a 1-D tensor; `valid` says whether it was null (then empty).
at::Tensor list_row(const ColumnData& c, const ParquetColumnInfo& info, double fill,
                    const RowPlace& at, bool& valid);

/// Row `at` of text column `c`: its bytes, or empty with `valid` false when null.
std::string_view text_row(const ColumnData& c, const ParquetColumnInfo& info,
                          const RowPlace& at, bool& valid);

}  // namespace mploader::parquet::detail
