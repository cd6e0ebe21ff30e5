// Footers and readers. Arrow reports errors as Status values and Parquet as exceptions: both
// become one message naming the file. Readers use the system allocator and no thread pool, so
// that nothing of Arrow's runs in a process when it forks.
#include "parquet/pq_file.h"

#include "parquet/pq_columns.h"
#include "util/errors.h"

#include <mploader/errors.h>

#include <arrow/io/file.h>
#include <arrow/memory_pool.h>
#include <arrow/type.h>
#include <parquet/exception.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace mploader::parquet::detail {
namespace {

struct Stamp {
  int64_t size = 0;
  int64_t mtime_ns = 0;
};

Stamp stamp_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw OptionError("paths", error_prefix(path) + std::strerror(errno) +
                      ". Fix: check the path");
  }
  if (!S_ISREG(st.st_mode)) {
    throw OptionError("paths", error_prefix(path) + "not a regular file. Fix: name Parquet "
                      "files, or a folder of them with ParquetShards::from_directory");
  }
  return {static_cast<int64_t>(st.st_size),
          int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec};
}

::parquet::ArrowReaderProperties arrow_properties() {
  ::parquet::ArrowReaderProperties p;
  p.set_use_threads(false);
  p.set_pre_buffer(false);
  return p;
}

// The reader of `path`, or the message of what stops it, without the file's name.
std::unique_ptr<::parquet::arrow::FileReader> open_at(const std::string& path,
                                                      std::string& why) {
  try {
    auto file = arrow::io::ReadableFile::Open(path, arrow::system_memory_pool());
    if (!file.ok()) {
      why = file.status().message();
      return nullptr;
    }
    ::parquet::arrow::FileReaderBuilder builder;
    ::parquet::ReaderProperties properties(arrow::system_memory_pool());
    // A page written with a checksum is checked against it: a flipped byte in a page of plain
    // values would otherwise decode to a wrong value, silently. Pages without one are read as is.
    properties.set_page_checksum_verification(true);
    arrow::Status opened = builder.Open(*file, properties);
    if (!opened.ok()) {
      why = opened.message();
      return nullptr;
    }
    auto reader = builder.memory_pool(arrow::system_memory_pool())
                      ->properties(arrow_properties())
                      ->Build();
    if (!reader.ok()) {
      why = reader.status().message();
      return nullptr;
    }
    return std::move(*reader);
  } catch (const std::exception& e) {  // Parquet throws ParquetException for a bad footer
    why = e.what();
    return nullptr;
  }
}

[[noreturn]] void refuse_changed(const ParquetFileInfo& file, const std::string& what) {
  throw Error(mploader::detail::message(
      "ParquetShards", file.path + ": the file changed after the dataset was built (" + what + ")",
      "Build the dataset again after a file is rewritten, or write new files instead of "
      "changing these while a job reads them"));
}

// Parquet stores a row in at least a bit of one of its columns' pages, and no writer packs more
// than a few rows per byte: a footer that counts more rows than the file has bytes is damaged
// (or forged), and planning its rows would be planning nothing real. `rows` are the row
// groups' counts, each already checked to be 0 or more.
void check_row_count(const std::string& path, uint64_t bytes, const std::vector<int64_t>& rows,
                     int columns) {
  if (columns == 0) return;  // rows without columns take no bytes
  uint64_t total = 0;
  for (size_t g = 0; g < rows.size() && total <= bytes; ++g) {
    total += static_cast<uint64_t>(rows[g]);
    if (total <= bytes) continue;
    throw OptionError("paths", error_prefix(path) + "its footer counts " +
                      std::to_string(total) + " rows by row group " + std::to_string(g) +
                      " in a file of " + std::to_string(bytes) + " bytes: more rows than "
                      "bytes, which no Parquet writer produces, so the footer is damaged. Fix: "
                      "write or copy the file again");
  }
}

}  // namespace

FooterScan scan_footer(const std::string& path) {
  const Stamp stamp = stamp_of(path);
  std::string why;
  std::unique_ptr<::parquet::arrow::FileReader> reader = open_at(path, why);
  if (!reader) {
    throw OptionError("paths", error_prefix(path) + "not a Parquet file, or its footer is "
                      "damaged or cut short (" + std::to_string(stamp.size) + " bytes: " + why +
                      "). Fix: write or copy the file again");
  }
  FooterScan scan;
  scan.info.path = path;
  scan.info.size = stamp.size;
  scan.info.mtime_ns = stamp.mtime_ns;
  const std::shared_ptr<::parquet::FileMetaData> meta = reader->parquet_reader()->metadata();
  for (int g = 0; g < meta->num_row_groups(); ++g) {
    const int64_t rows = meta->RowGroup(g)->num_rows();
    if (rows < 0) {
      throw OptionError("paths", error_prefix(path) + "its footer says row group " +
                        std::to_string(g) + " has " + std::to_string(rows) + " rows: the "
                        "footer is damaged. Fix: write or copy the file again");
    }
    scan.info.row_group_rows.push_back(rows);
  }
  check_row_count(path, static_cast<uint64_t>(stamp.size), scan.info.row_group_rows,
                  meta->num_columns());
  const arrow::Status status = reader->GetSchema(&scan.schema);
  if (!status.ok()) {
    throw OptionError("paths", error_prefix(path) + "its schema has no Arrow equivalent (" +
                      status.message() + "). Fix: write the file with pyarrow or another "
                      "Arrow-based writer");
  }
  return scan;
}

void check_unchanged(const ParquetFileInfo& file) {
  Stamp now;
  try {
    now = stamp_of(file.path);
  } catch (const OptionError& e) {
    refuse_changed(file, std::string("it cannot be opened now: ") + e.what());
  }
  if (now.size != file.size) {
    refuse_changed(file, std::to_string(file.size) + " bytes then, " + std::to_string(now.size) +
                             " now");
  }
  if (now.mtime_ns != file.mtime_ns) {
    refuse_changed(file, "its modification time moved by " +
                             std::to_string((now.mtime_ns - file.mtime_ns) / 1000000) + " ms");
  }
}

std::unique_ptr<::parquet::arrow::FileReader> open_reader(const ParquetFileInfo& file) {
  check_unchanged(file);
  std::string why;
  std::unique_ptr<::parquet::arrow::FileReader> reader = open_at(file.path, why);
  if (!reader) refuse_changed(file, "its footer no longer reads: " + why);
  const std::shared_ptr<::parquet::FileMetaData> meta = reader->parquet_reader()->metadata();
  bool same = meta->num_row_groups() == static_cast<int>(file.row_group_rows.size());
  for (int g = 0; same && g < meta->num_row_groups(); ++g) {
    same = meta->RowGroup(g)->num_rows() == file.row_group_rows[static_cast<size_t>(g)];
  }
  if (!same) {
    refuse_changed(file, std::to_string(meta->num_row_groups()) +
                             " row groups of other counts now");
  }
  return reader;
}

}  // namespace mploader::parquet::detail
