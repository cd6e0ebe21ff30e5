// Decoding row groups: only the columns asked for, each into one Arrow chunk, the last few
// kept. A column whose type is not the one planned means the file changed.
#include "parquet/pq_reading.h"

#include "parquet/pq_columns.h"
#include "parquet/pq_file.h"
#include "util/errors.h"

#include <mploader/errors.h>

#include <mploader/loading_context.h>
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

// "<file>: row group 3 of 8: ", the start of what happened to a row group.
std::string in_group(const ParquetFileInfo& file, int group) {
  return file.path + ": row group " + std::to_string(group) + " of " +
         std::to_string(file.row_group_rows.size()) + ": ";
}

[[noreturn]] void refuse(const std::string& what, const std::string& fix) {
  throw Error(mploader::detail::message("ParquetShards", what, fix));
}

// Arrow allocates a row group's decoded columns whole, from the row count the footer gives: a
// damaged footer that claims billions of rows would take the machine's memory (or abort a
// sanitized build) before a page is read. The least a row can decode to: its tensor columns'
// bytes, and 4 for any other column (an offset), or 2 (a definition level).
void check_decodable(const ParquetFileInfo& file, int group,
                     const std::vector<ParquetColumnInfo>& columns) {
  int64_t row_bytes = 0;
  for (const ParquetColumnInfo& c : columns) {
    int64_t bytes = 4;
    if (c.kind == ColumnKind::kTensor) {
      bytes = static_cast<int64_t>(c10::elementSize(c.dtype));
      for (int64_t d : c.shape) bytes *= d;
    }
    row_bytes += std::max<int64_t>(bytes, 2);
  }
  const int64_t rows = file.row_group_rows[static_cast<size_t>(group)];
  const int64_t memory = static_cast<int64_t>(::sysconf(_SC_PHYS_PAGES)) * ::sysconf(_SC_PAGESIZE);
  if (row_bytes > 0 && rows > memory / row_bytes) {
    refuse(in_group(file, group) + "its footer says it has " + std::to_string(rows) +
               " rows, which decode to at least " + std::to_string(row_bytes) +
               " bytes each: more than this machine's " + std::to_string(memory >> 20) +
               " MiB of memory",
           "The footer is damaged, or the file was written with one huge row group: write it "
           "again with smaller ones");
  }
}

// Column `column` of row group `group` (its Parquet leaves `leaves`), decoded into one array
// and checked. Read a column at a time so that a damaged page is named by its column.
std::shared_ptr<arrow::Array> read_column(const ParquetFileInfo& info,
                                          ::parquet::arrow::FileReader& reader, int group,
                                          const ParquetColumnInfo& column,
                                          const std::vector<int>& leaves) {
  const std::string where = in_group(info, group) + "column '" + column.name + "' ";
  const std::string damaged = "The file is damaged: write or copy it again";
  arrow::Result<std::shared_ptr<arrow::Table>> table;
  try {
    ScopedStageTimer stage(DatasetStage::kDecode);
    table = reader.ReadRowGroup(group, leaves);
  } catch (const std::exception& e) {  // Parquet throws for a damaged page or checksum
    refuse(where + "cannot be decoded (" + e.what() + ")", damaged);
  }
  if (!table.ok()) {
    refuse(where + "cannot be decoded (" + table.status().message() + ")", damaged);
  }
  const std::shared_ptr<arrow::ChunkedArray> chunks = (*table)->GetColumnByName(column.name);
  std::shared_ptr<arrow::Array> array;
  if (chunks != nullptr && chunks->num_chunks() == 1) {
    array = chunks->chunk(0);
  } else if (chunks != nullptr && chunks->num_chunks() > 1) {
    auto joined = arrow::Concatenate(chunks->chunks(), arrow::system_memory_pool());
    if (!joined.ok()) {
      refuse(where + "cannot be joined into one array (" + joined.status().message() + ")",
             "Write smaller row groups");
    }
    array = *joined;
  }
  const int64_t rows = info.row_group_rows[static_cast<size_t>(group)];
  if (array == nullptr || array->length() != rows) {
    refuse(where + "decoded " + std::to_string(array ? array->length() : 0) +
               " rows, not the footer's " + std::to_string(rows),
           damaged);
  }
  // libparquet does not check what a damaged page decodes to: offsets past their data (a
  // string or list) would be read past its buffer. O(rows), beside the decode itself.
  if (const arrow::Status valid = array->ValidateFull(); !valid.ok()) {
    refuse(where + "decoded to invalid data (" + valid.message() + ")", damaged);
  }
  return array;
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
    detail::check_unchanged(files_[file]);  // open_reader() checks a file it opens
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
      refuse(files_[file].path + ": column '" + column.name + "' is no longer of type " +
                 column.arrow_type,
             "Build the dataset again after a file is rewritten");
    }
    collect_leaves(*field, f.leaves.emplace_back());
    std::sort(f.leaves.back().begin(), f.leaves.back().end());
  }
  open_.push_front(std::move(f));
  if (open_.size() > kOpenFilesKept) open_.pop_back();
  return open_.front();
}

DecodedGroup ParquetShards::Reading::decode(size_t shard, OpenFile& file, int group) {
  const ParquetFileInfo& info = files_[file.file];
  check_decodable(info, group, columns_);
  DecodedGroup out;
  out.shard = shard;
  for (size_t c = 0; c < columns_.size(); ++c) {
    std::shared_ptr<arrow::Array> array =
        read_column(info, *file.reader, group, columns_[c], file.leaves[c]);
    out.bytes += arrow::util::TotalBufferSize(*array);
    out.columns.push_back(detail::column_data(std::move(array)));
  }
  ++groups_decoded;
  return out;
}

std::vector<bool>& ParquetShards::Reading::served_rows(size_t shard, int64_t rows_in_group) {
  // A new epoch hands every row out again.
  const std::optional<LoadingContext> context = loading_context();
  const uint64_t epoch = context ? context->epoch : 0;
  if (epoch != epoch_) {
    served_.clear();
    for (DecodedGroup& g : groups_) g.unserved = static_cast<int64_t>(g.columns[0].array->length());
    epoch_ = epoch;
  }
  std::vector<bool>& rows = served_[shard];
  if (rows.empty()) rows.resize(static_cast<size_t>(rows_in_group), false);
  return rows;
}

void ParquetShards::Reading::served(DecodedGroup& group, int64_t row, int64_t rows) {
  std::vector<bool>& bits = served_rows(group.shard, group.columns[0].array->length());
  for (int64_t r = row; r < row + rows; ++r) {
    if (!bits[static_cast<size_t>(r)]) {
      bits[static_cast<size_t>(r)] = true;
      --group.unserved;
    }
  }
}

// After a decode: the row groups behind the newest two go when every row of theirs was handed
// out, and the oldest of them go while they hold more rows not yet handed out than read_ahead,
// or the groups more bytes than cache_bytes. The newest two always stay, whatever their bytes:
// the one being read, and the one it just left, most of whose last rows the shuffle buffer
// still holds (letting it go would decode it again for each of them).
void ParquetShards::Reading::let_go() {
  for (size_t k = 2; k < groups_.size();) {
    if (groups_[k].unserved <= 0) {
      groups_.erase(groups_.begin() + static_cast<std::ptrdiff_t>(k));
    } else {
      ++k;
    }
  }
  auto waiting = [&] {
    int64_t rows = 0;
    for (size_t k = 2; k < groups_.size(); ++k) rows += groups_[k].unserved;
    return rows;
  };
  auto bytes = [&] {
    int64_t total = 0;
    for (const DecodedGroup& g : groups_) total += g.bytes;
    return total;
  };
  while (groups_.size() > 2 &&
         (waiting() > options_.read_ahead || bytes() > options_.cache_bytes)) {
    groups_.pop_back();
  }
}

DecodedGroup& ParquetShards::Reading::decoded(size_t shard, size_t file, int group) {
  for (DecodedGroup& g : groups_) {
    if (g.shard == shard) return g;
  }
  DecodedGroup fresh = decode(shard, open(file), group);
  const std::vector<bool>& bits =
      served_rows(shard, files_[file].row_group_rows[static_cast<size_t>(group)]);
  fresh.unserved = static_cast<int64_t>(std::count(bits.begin(), bits.end(), false));
  groups_.push_front(std::move(fresh));
  let_go();
  return groups_.front();
}

}  // namespace mploader::parquet
