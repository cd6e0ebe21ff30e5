// Rows into memory. A run of rows with no dictionary and no null is one copy a column; any
// other row is looked up and checked on its own.
#include "parquet/pq_rows.h"

#include "parquet/pq_columns.h"
#include "util/errors.h"

#include <mploader/errors.h>

#include <mploader/stage_timer.h>

#include <ATen/ATen.h>

#include <arrow/array.h>

#include <optional>
#include <stdexcept>

namespace mploader::parquet::detail {
namespace {

// "<file>: row group 2, row 5 (sample 105), column 'x'": where a row's error happened.
std::string place_text(const RowPlace& at, const ParquetColumnInfo& info) {
  return at.file->path + ": row group " + std::to_string(at.group) + ", row " +
         std::to_string(at.row) + " (sample " + std::to_string(at.global) + "), column '" +
         info.name + "'";
}

[[noreturn]] void refuse_row(const RowPlace& at, const ParquetColumnInfo& info,
                             const std::string& what, const std::string& fix) {
  throw Error(mploader::detail::message("ParquetShards", place_text(at, info) + what, fix));
}

[[noreturn]] void refuse_null(const RowPlace& at, const ParquetColumnInfo& info,
                              const char* what) {
  refuse_row(at, info, std::string(" holds a null ") + what + ", and its null policy is refuse",
             "Set ParquetShardsOptions::nulls, or column_nulls[\"" + info.name +
                 "\"], to NullPolicy::kFill (nulls become null_fill) or kMask (and a \"" +
                 info.name + "_valid\" field)");
}

RowPlace advanced(RowPlace at, int64_t by) {
  at.row += by;
  at.global += by;
  return at;
}

}  // namespace

void write_tensor_rows(const ColumnData& c, const ParquetColumnInfo& info, double fill,
                       const RowPlace& at, int64_t rows, uint8_t* dst, uint8_t* mask) {
  int64_t numel = 1;
  for (int64_t d : info.shape) numel *= d;
  const int64_t row_bytes = numel * static_cast<int64_t>(c10::elementSize(info.dtype));
  if (!c.dictionary && !c.has_nulls) {
    copy_elements(leaf_range(*c.values, at.row, rows), info.dtype, nullptr, dst);
    if (mask != nullptr) std::fill(mask, mask + rows, uint8_t{1});
    return;
  }
  const double* element_fill = info.nulls == NullPolicy::kRefuse ? nullptr : &fill;
  for (int64_t i = 0; i < rows; ++i, dst += row_bytes) {
    const int64_t value = value_row(c, at.row + i);
    if (value < 0) {
      if (info.nulls == NullPolicy::kRefuse) refuse_null(advanced(at, i), info, "row");
      fill_elements(info.dtype, fill, numel, dst);
    } else if (!copy_elements(leaf_range(*c.values, value, 1), info.dtype, element_fill, dst)) {
      refuse_null(advanced(at, i), info, "element in its list");
    }
    if (mask != nullptr) mask[i] = value >= 0 ? 1 : 0;
  }
}

void write_image_row(const ColumnData& c, const ParquetColumnInfo& info,
                     const vision::Compose& compose, const RowPlace& at, uint64_t seed,
                     ImageState state, uint8_t* dst) {
  const int64_t value = value_row(c, at.row);
  std::string_view bytes;
  if (value < 0 || !image_bytes(*c.values, value, bytes)) {
    refuse_row(at, info, " holds no image (null)",
               "Drop the rows without an image when writing the file: an image column's nulls "
               "are never filled");
  }
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  try {
    std::optional<ScopedStageTimer> stage(std::in_place, DatasetStage::kDecode);
    const vision::ImageInfo image = state.decoder.info(data, bytes.size());
    const vision::ImagePlan plan = compose.plan(image.width, image.height, seed);
    state.decoder.decode(data, bytes.size(), compose.needed_region(plan, image.width,
                                                                   image.height),
                         compose.min_scale(plan), state.image);
    stage.emplace(DatasetStage::kTransform);
    compose.render(state.image, plan, dst, state.scratch);
  } catch (const vision::DecodeError& e) {
    refuse_row(at, info,
               ": the image does not decode (" + std::to_string(bytes.size()) +
                   " bytes: " + e.what() + ")",
               "Rewrite the row with a JPEG or PNG file");
  } catch (const vision::TransformError& e) {
    refuse_row(at, info,
               ": the image does not fit the transform " + compose.describe() + ": " + e.what(),
               "Give a transform that fits every image, or leave this row out");
  }
}

at::Tensor list_row(const ColumnData& c, const ParquetColumnInfo& info, double fill,
                    const RowPlace& at, bool& valid) {
  const int64_t value = value_row(c, at.row);
  valid = value >= 0;
  if (!valid) {
    if (info.nulls == NullPolicy::kRefuse) refuse_null(at, info, "row");
    return at::empty({0}, info.dtype);
  }
  const LeafRange range = list_range(*c.values, value);
  at::Tensor out = at::empty({range.count}, info.dtype);
  const double* element_fill = info.nulls == NullPolicy::kRefuse ? nullptr : &fill;
  if (!copy_elements(range, info.dtype, element_fill, static_cast<uint8_t*>(out.data_ptr()))) {
    refuse_null(at, info, "element in its list");
  }
  return out;
}

std::string_view text_row(const ColumnData& c, const ParquetColumnInfo& info,
                          const RowPlace& at, bool& valid) {
  const int64_t value = value_row(c, at.row);
  valid = value >= 0;
  if (valid) return text_view(*c.values, value);
  if (info.nulls == NullPolicy::kRefuse) refuse_null(at, info, "row");
  return {};
}

}  // namespace mploader::parquet::detail
