// ParquetShards: footers read once into shards (one per row group), then rows read from the
// row groups each process decodes.
#include <mploader/parquet/parquet_shards.h>

#include "core/file_list.h"
#include "parquet/pq_columns.h"
#include "parquet/pq_file.h"
#include "parquet/pq_reading.h"
#include "parquet/pq_rows.h"
#include "util/errors.h"

#include <mploader/errors.h>
#include <arrow/type.h>

#include <unistd.h>

#include <algorithm>
#include <set>

namespace mploader::parquet {
namespace {

void check_options(const std::vector<std::string>& paths, const ParquetShardsOptions& o) {
  mploader::detail::check_file_list("ParquetShards", "paths", paths, /*from_directory=*/true);
  std::set<std::string> columns;
  for (const std::string& c : o.columns) {
    if (c.empty() || !columns.insert(c).second) {
      throw OptionError("columns", mploader::detail::message(
                                       "ParquetShards", "columns lists '" + c + "' " +
                                                            (c.empty() ? "(an empty name)"
                                                                       : "twice"),
                                       "List each column once, by its top-level name"));
    }
  }
  if (o.read_ahead < 0 || o.cache_bytes < 0 || o.max_pixels < 1) {
    throw OptionError("read_ahead",
                      mploader::detail::message("ParquetShards",
                                                "read_ahead is " + std::to_string(o.read_ahead) +
                                                    ", cache_bytes " +
                                                    std::to_string(o.cache_bytes) +
                                                    ", max_pixels " +
                                                    std::to_string(o.max_pixels),
                                                "Give max_pixels 1 or more, read_ahead and "
                                                "cache_bytes 0 or more"));
  }
}

// The columns of the first file that the options select, in the options' order.
std::vector<std::shared_ptr<arrow::Field>> selected(const detail::FooterScan& scan,
                                                    const ParquetShardsOptions& o) {
  if (o.columns.empty()) return scan.schema->fields();
  std::vector<std::shared_ptr<arrow::Field>> out;
  for (const std::string& name : o.columns) {
    std::shared_ptr<arrow::Field> f = scan.schema->GetFieldByName(name);
    if (f == nullptr) {
      throw OptionError("columns", detail::error_prefix(scan.info.path) + "has no column '" +
                        name + "'; its columns are " + detail::column_names(*scan.schema) +
                        ". Fix: name one of them in ParquetShardsOptions::columns");
    }
    out.push_back(std::move(f));
  }
  return out;
}

void check_named_columns(const ParquetShardsOptions& o,
                         const std::vector<ParquetColumnInfo>& columns) {
  auto known = [&](const std::string& name) {
    return std::any_of(columns.begin(), columns.end(),
                       [&](const ParquetColumnInfo& c) { return c.name == name; });
  };
  for (const auto& [name, compose] : o.image_columns) {
    if (!known(name)) {
      throw OptionError("image_columns", "mploader: ParquetShards: image column '" + name +
                        "' is not among the columns read. Fix: name a column of the files (and "
                        "list it in ParquetShardsOptions::columns when that is not empty)");
    }
  }
  for (const auto& [name, policy] : o.column_nulls) {
    if (!known(name)) {
      throw OptionError("column_nulls", "mploader: ParquetShards: column_nulls names '" + name +
                        "', which is not among the columns read. Fix: name a column read");
    }
  }
}

// Every later file must have the first file's columns, of the same types.
void check_same_columns(const detail::FooterScan& scan, const std::string& first,
                        const std::vector<ParquetColumnInfo>& columns) {
  for (const ParquetColumnInfo& c : columns) {
    const std::shared_ptr<arrow::Field> f = scan.schema->GetFieldByName(c.name);
    if (f == nullptr) {
      throw OptionError("paths", detail::error_prefix(scan.info.path) + "has no column '" +
                        c.name + "', which " + first + " has; its columns are " +
                        detail::column_names(*scan.schema) + ". Fix: give files of one "
                        "schema, or read only the columns they share (columns)");
    }
    if (f->type()->ToString() != c.arrow_type) {
      throw OptionError("paths", detail::error_prefix(scan.info.path) + "column '" + c.name +
                        "' has Arrow type " + f->type()->ToString() + " but " + first +
                        " has " + c.arrow_type + ". Fix: write every file with one schema");
    }
  }
}

}  // namespace

ParquetShards::ParquetShards(std::vector<std::string> paths, ParquetShardsOptions options)
    : options_(std::move(options)) {
  check_options(paths, options_);
  for (const std::string& path : paths) {
    detail::FooterScan scan = detail::scan_footer(path);
    if (files_.empty()) {
      for (const auto& field : selected(scan, options_)) {
        columns_.push_back(detail::plan_column(*field, options_, path));
      }
      check_named_columns(options_, columns_);
    } else {
      check_same_columns(scan, files_.front().path, columns_);
    }
    files_.push_back(std::move(scan.info));
  }
  if (columns_.empty()) {
    throw OptionError("paths", detail::error_prefix(files_.front().path) + "has no column. Fix: "
                      "give files that hold columns");
  }
  int64_t rows = 0;
  for (const ParquetFileInfo& f : files_) {
    for (int64_t n : f.row_group_rows) rows += n;
  }
  if (rows == 0) {
    throw OptionError("paths", detail::error_prefix(files_.front().path) + "the " +
                      std::to_string(files_.size()) + " file(s) hold no row. Fix: give files "
                      "that hold rows");
  }
  finish_construction();
}

ParquetShards::ParquetShards(std::vector<ParquetFileInfo> files,
                             std::vector<ParquetColumnInfo> columns, ParquetShardsOptions options)
    : files_(std::move(files)), columns_(std::move(columns)), options_(std::move(options)) {
  finish_construction();
}

ParquetShards::ParquetShards(const ParquetShards& other)
    : StreamingDataset(other), files_(other.files_), columns_(other.columns_),
      options_(other.options_), shard_file_(other.shard_file_), shard_group_(other.shard_group_),
      has_layout_(other.has_layout_) {}

ParquetShards::~ParquetShards() = default;

void ParquetShards::finish_construction() {
  std::vector<ShardInfo> shards;
  for (size_t f = 0; f < files_.size(); ++f) {
    const auto& groups = files_[f].row_group_rows;
    for (size_t g = 0; g < groups.size(); ++g) {
      shards.push_back({files_[f].path + "#row_group=" + std::to_string(g), groups[g]});
      shard_file_.push_back(f);
      shard_group_.push_back(static_cast<int>(g));
    }
  }
  declare_shards(std::move(shards));
  has_layout_ = std::all_of(columns_.begin(), columns_.end(), [](const ParquetColumnInfo& c) {
    return c.kind == ColumnKind::kTensor || c.kind == ColumnKind::kImage;
  });
}

std::shared_ptr<ParquetShards> ParquetShards::from_directory(const std::string& dir,
                                                             ParquetShardsOptions options) {
  std::vector<std::string> paths =
      mploader::detail::folder_files("ParquetShards", dir, ".parquet");
  return std::make_shared<ParquetShards>(std::move(paths), std::move(options));
}

ParquetShards::Reading& ParquetShards::reading() {
  // A reader copied into a child by fork belongs to the parent: the child opens its own.
  if (reading_ == nullptr || reading_->pid != ::getpid()) {
    reading_ = std::make_unique<Reading>(files_, columns_, options_);
  }
  return *reading_;
}

int64_t ParquetShards::row_groups_decoded() const {
  return reading_ && reading_->pid == ::getpid() ? reading_->groups_decoded : 0;
}

int64_t ParquetShards::files_opened() const {
  return reading_ && reading_->pid == ::getpid() ? reading_->files_opened : 0;
}

std::string ParquetShards::shuffle_buffer_warning(int64_t shuffle_buffer) const {
  if (shuffle_buffer <= options_.read_ahead) return {};
  return "ParquetShards: LoaderOptions::shuffle_buffer is " + std::to_string(shuffle_buffer) +
         " rows, but ParquetShardsOptions::read_ahead keeps only " +
         std::to_string(options_.read_ahead) + " rows not yet asked for behind the row group "
         "being read: a row the buffer hands out after its row group was let go decodes that "
         "whole row group again, which can make an epoch many times slower. Set read_ahead to "
         "at least " + std::to_string(shuffle_buffer);
}

}  // namespace mploader::parquet
