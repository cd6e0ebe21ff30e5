// What one process holds to read a ParquetShards: its open files, its decoded row groups, and
// which rows of them it has handed out this epoch. Made on the first read in the process that
// reads (a worker), never inherited across a fork: ParquetShards makes a new one when the
// process id changed.
#pragma once

#include "parquet/pq_values.h"

#include <mploader/parquet/parquet_shards.h>
#include <mploader/vision/decode.h>

#include <parquet/arrow/reader.h>

#include <sys/types.h>

#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

namespace mploader::parquet {

/// Readers are kept for this many files at most (the last ones read): a shuffle buffer's window
/// may span a few files, a job of many files must not hold a descriptor each.
inline constexpr size_t kOpenFilesKept = 4;

/// A row group decoded: each column of ParquetShards::columns(), in that order.
struct DecodedGroup {
  size_t shard = 0;
  std::vector<detail::ColumnData> columns;
  int64_t bytes = 0;
  int64_t unserved = 0;  ///< Its rows not yet handed out this epoch.
};

struct ParquetShards::Reading {
  Reading(const std::vector<ParquetFileInfo>& files,
          const std::vector<ParquetColumnInfo>& columns, const ParquetShardsOptions& options);

  /// Row group `group` of file `file` (shard `shard`), decoded now or kept from before.
  /// Throws mploader::Error naming the file, the row group and what failed.
  DecodedGroup& decoded(size_t shard, size_t file, int group);
  /// Rows [row, row + rows) of `group` are being handed out.
  void served(DecodedGroup& group, int64_t row, int64_t rows);

  pid_t pid;                   ///< The process that made it.
  int64_t groups_decoded = 0;  ///< Row groups decoded by this process.
  int64_t files_opened = 0;    ///< Files opened by this process.
  vision::ImageDecoder decoder;  ///< For image columns, reused row to row.
  vision::RgbImage image;
  vision::RenderScratch scratch;

 private:
  struct OpenFile {
    size_t file = 0;
    std::unique_ptr<::parquet::arrow::FileReader> reader;
    std::vector<std::vector<int>> leaves;  // per column read, its Parquet leaf columns
  };
  // The reader of `file`, opened now or kept from before, the file checked unchanged since the
  // footer was read either way: called once per row group decoded.
  OpenFile& open(size_t file);
  DecodedGroup decode(size_t shard, OpenFile& file, int group);
  void let_go();
  std::vector<bool>& served_rows(size_t shard, int64_t rows_in_group);

  const std::vector<ParquetFileInfo>& files_;
  const std::vector<ParquetColumnInfo>& columns_;
  const ParquetShardsOptions& options_;
  std::deque<OpenFile> open_;        // most recently used first
  std::deque<DecodedGroup> groups_;  // most recently decoded first
  // Per shard read this epoch, its rows handed out: whether a kept row group still holds rows
  // the shuffle buffer will ask for. Bits for the rows this process reads, about one an epoch.
  std::unordered_map<size_t, std::vector<bool>> served_;
  uint64_t epoch_ = 0;
};

}  // namespace mploader::parquet
