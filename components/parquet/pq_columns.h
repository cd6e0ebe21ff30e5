// parquet/: Parquet files as StreamingDatasets (mploader::parquet, on Arrow C++ and Parquet
// C++). Here: how each Arrow column type becomes a field of the sample, checked once, from the
// footer's schema, when the dataset is built.
#pragma once

#include <mploader/parquet/parquet_shards.h>

#include <arrow/type_fwd.h>

#include <optional>
#include <string>

namespace mploader::parquet::detail {

/// "mploader: ParquetShards: <file>: ", the start of every message about a file.
std::string error_prefix(const std::string& file);

/// The tensor element type a fixed-width Arrow leaf type reads as; nullopt when it has none.
std::optional<at::ScalarType> leaf_dtype(const arrow::DataType& type);

/// The type a column's values have once a dictionary is looked through.
const arrow::DataType& value_type(const arrow::DataType& type);

/// Column `field` of `file` as a field of the sample, under `options`. Throws OptionError
/// naming the column, the file and the fix for a type ParquetShards cannot read.
ParquetColumnInfo plan_column(const arrow::Field& field, const ParquetShardsOptions& options,
                              const std::string& file);

/// The top-level column names of `schema`, comma-separated, for messages.
std::string column_names(const arrow::Schema& schema);

const char* kind_name(ColumnKind kind);      ///< "tensor", "list", "text", "image".
const char* policy_name(NullPolicy policy);  ///< "refuse", "fill", "mask".

}  // namespace mploader::parquet::detail
