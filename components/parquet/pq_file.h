// Opening a Parquet file: its footer read once when the dataset is built, and a reader per
// process afterwards, each checked against what the footer said then.
#pragma once

#include <mploader/parquet/parquet_shards.h>

#include <arrow/type_fwd.h>
#include <parquet/arrow/reader.h>

#include <memory>
#include <string>

namespace mploader::parquet::detail {

/// What one file's footer says: the counts of its row groups and its Arrow schema.
struct FooterScan {
  ParquetFileInfo info;
  std::shared_ptr<arrow::Schema> schema;
};

/// Reads `path`'s footer (no data). Throws OptionError naming the file when it is missing,
/// unreadable, not Parquet, cut short or damaged.
FooterScan scan_footer(const std::string& path);

/// A reader of `file` for this process, its footer read again and checked: size, modification
/// time and row group counts as `file` recorded them. Reads with no thread of Arrow's and no
/// read-ahead, so a process that forks holds no thread. Throws mploader::Error naming the
/// file and the change.
std::unique_ptr<::parquet::arrow::FileReader> open_reader(const ParquetFileInfo& file);

/// Throws mploader::Error naming the file when its size or modification time is no longer
/// what `file` recorded.
void check_unchanged(const ParquetFileInfo& file);

}  // namespace mploader::parquet::detail
