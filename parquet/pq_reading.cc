// Decoding row groups: only the columns asked for, each into one Arrow chunk, the last few
// kept. A column whose type is not the one planned means the file changed.
#include "parquet/pq_reading.h"

#include "parquet/pq_columns.h"
#include "parquet/pq_file.h"

#include <mploader/stage_timer.h>

#include <arrow/array.h>
#include <arrow/array/concatenate.h>
#include <arrow/memory_pool.h>
#include <arrow/table.h>
#include <arrow/util/byte_size.h>
#include <parquet/arrow/schema.h>

#include <unistd.h>

#include <algorithm>
#include <stdexcept>

namespace mploader::parquet {
namespace {

void collect_leaves(const ::parquet::arrow::SchemaField& field, std::vector<int>& out) {
  if (field.is_leaf()) out.push_back(field.column_index);
  for (const auto& child : field.children) collect_leaves(child, out);
}

std::string in_group(const ParquetFileInfo& file, int group) {
  return detail::error_prefix(file.path) + "row group " + std::to_string(group) + " of " +
         std::to_string(file.row_group_rows.size()) + ": ";
}

}  // namespace

ParquetShards::Reading::Reading(const std::vector<ParquetFileInfo>& files,
                                const std::vector<ParquetColumnInfo>& columns,
                                const ParquetShardsOptions& options)
    : pid(::getpid()), decoder(options.max_pixels), files_(files), columns_(columns),
      options_(options) {}

ParquetShards::Reading::OpenFile& ParquetShards::Reading::open(size_t file) {
  auto it = std::find_if(open_.begin(), open_.end(), [&](const OpenFile& f) {
    return f.file == file;
  });
  if (it != open_.end()) {
    if (it != open_.begin()) {
      OpenFile moved = std::move(*it);
      open_.erase(it);
      open_.push_front(std::move(moved));
    }
    return open_.front();
  }
  OpenFile f{file, detail::open_reader(files_[file]), {}};
  ++files_opened;
  const auto& fields = f.reader->manifest().schema_fields;
  for (const ParquetColumnInfo& column : columns_) {
    auto field = std::find_if(fields.begin(), fields.end(), [&](const auto& sf) {
      return sf.field->name() == column.name;
    });
    if (field == fields.end() || field->field->type()->ToString() != column.arrow_type) {
      throw std::runtime_error(detail::error_prefix(files_[file].path) + "column '" +
                               column.name + "' is no longer of type " + column.arrow_type +
                               ". Fix: build the dataset again after a file is rewritten");
    }
    collect_leaves(*field, f.leaves);
  }
  std::sort(f.leaves.begin(), f.leaves.end());
  open_.push_front(std::move(f));
  if (open_.size() > kOpenFilesKept) open_.pop_back();
  return open_.front();
}

DecodedGroup ParquetShards::Reading::decode(size_t shard, OpenFile& file, int group) {
  const ParquetFileInfo& info = files_[file.file];
  detail::check_unchanged(info);
  arrow::Result<std::shared_ptr<arrow::Table>> table;
  try {
    ScopedStageTimer stage(DatasetStage::kDecode);
    table = file.reader->ReadRowGroup(group, file.leaves);
  } catch (const std::exception& e) {  // Parquet throws for a damaged page
    throw std::runtime_error(in_group(info, group) + "cannot be decoded (" + e.what() +
                             "). Fix: the file is damaged: write or copy it again");
  }
  if (!table.ok()) {
    throw std::runtime_error(in_group(info, group) + "cannot be decoded (" +
                             table.status().message() + "). Fix: the file is damaged: write "
                             "or copy it again");
  }
  DecodedGroup out;
  out.shard = shard;
  for (const ParquetColumnInfo& column : columns_) {
    const std::shared_ptr<arrow::ChunkedArray> chunks = (*table)->GetColumnByName(column.name);
    std::shared_ptr<arrow::Array> array;
    if (chunks != nullptr && chunks->num_chunks() == 1) {
      array = chunks->chunk(0);
    } else if (chunks != nullptr && chunks->num_chunks() > 1) {
      auto joined = arrow::Concatenate(chunks->chunks(), arrow::system_memory_pool());
      if (!joined.ok()) {
        throw std::runtime_error(in_group(info, group) + "column '" + column.name +
                                 "' cannot be joined into one array (" +
                                 joined.status().message() + "). Fix: write smaller row groups");
      }
      array = *joined;
    }
    const int64_t rows = info.row_group_rows[static_cast<size_t>(group)];
    if (array == nullptr || array->length() != rows) {
      throw std::runtime_error(in_group(info, group) + "column '" + column.name + "' decoded " +
                               std::to_string(array ? array->length() : 0) + " rows, not the " +
                               "footer's " + std::to_string(rows) + ". Fix: the file is "
                               "damaged: write or copy it again");
    }
    out.bytes += arrow::util::TotalBufferSize(*array);
    out.columns.push_back(detail::column_data(std::move(array)));
  }
  ++groups_decoded;
  return out;
}

const DecodedGroup& ParquetShards::Reading::decoded(size_t shard, size_t file, int group) {
  auto it = std::find_if(groups_.begin(), groups_.end(), [&](const DecodedGroup& g) {
    return g.shard == shard;
  });
  if (it == groups_.begin() && it != groups_.end()) return groups_.front();
  if (it != groups_.end()) {
    DecodedGroup moved = std::move(*it);
    groups_.erase(it);
    groups_.push_front(std::move(moved));
    return groups_.front();
  }
  groups_.push_front(decode(shard, open(file), group));
  int64_t bytes = 0;
  size_t keep = 0;
  while (keep < groups_.size() && (keep == 0 || (static_cast<int64_t>(keep) <
                                                     options_.cache_row_groups &&
                                                 bytes + groups_[keep].bytes <=
                                                     options_.cache_bytes))) {
    bytes += groups_[keep].bytes;
    ++keep;
  }
  groups_.resize(keep);
  return groups_.front();
}

}  // namespace mploader::parquet
