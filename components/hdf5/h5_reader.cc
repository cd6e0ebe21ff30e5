// Reading rows by hyperslab. libhdf5 converts each element to the memory type as it reads (byte
// order, uint16 to int32), decompressing chunks through the per-field chunk cache.
#include "hdf5/h5_reader.h"

#include "hdf5/h5_meta.h"

#include <mploader/errors.h>

#include <c10/core/ScalarType.h>

#include <algorithm>

namespace mploader::hdf5::detail {
namespace {

bool same(const H5Dataset::FileStamp& a, const H5Dataset::FileStamp& b) {
  return a.size == b.size && a.mtime_ns == b.mtime_ns;
}

std::string changed(const std::string& file, const H5Dataset::FileStamp& then,
                    const H5Dataset::FileStamp& now) {
  return error_prefix(file) + "changed after the dataset was built (" +
         std::to_string(then.size) + " bytes then, " + std::to_string(now.size) +
         " now; modified " + std::to_string((now.mtime_ns - then.mtime_ns) / 1000000) +
         " ms later)";
}

std::string rows_text(int64_t first, int64_t last) {
  return first == last ? "row " + std::to_string(first)
                       : "rows " + std::to_string(first) + " to " + std::to_string(last);
}

}  // namespace

FileReader::FileReader(const std::string& file, const std::vector<H5FieldInfo>& info,
                       const H5DatasetOptions& options, const H5Dataset::FileStamp& stamp)
    : file_(file), info_(&info), stamp_(stamp), swmr_(options.swmr_read) {
  const H5Dataset::FileStamp now = stamp_of(file);
  if (!swmr_ && !same(now, stamp)) {
    throw Error(changed(file, stamp, now) + ": its rows may no longer be those counted. Fix: "
                "build the dataset again after the file is written, or set "
                "H5DatasetOptions::swmr_read for a file that a SWMR writer appends to");
  }
  file_handle_ = open_file(file, options.swmr_read);
  for (const H5FieldInfo& planned : info) {
    OpenField f;
    f.dataset = open_field(file_handle_.get(), file, planned.path, options.chunk_cache_bytes);
    const H5FieldInfo found =
        describe_field(f.dataset.get(), file, {planned.name, planned.path}, &f.type);
    const bool same_rows = options.swmr_read ? found.shape[0] >= planned.shape[0]
                                             : found.shape[0] == planned.shape[0];
    if (found.file_type != planned.file_type || found.row_shape() != planned.row_shape() ||
        !same_rows) {
      throw Error(error_prefix(file) + "field '" + planned.name + "' (" + planned.path +
                  ") is now " + found.file_type + " with " + std::to_string(found.shape[0]) +
                  " rows, not the " + planned.file_type + " with " +
                  std::to_string(planned.shape[0]) + " rows the dataset was built with. Fix: "
                  "build the dataset again from the file as it is now");
    }
    f.file_space = Handle(H5Dget_space(f.dataset.get()), H5Sclose);
    f.dims.assign(found.shape.begin(), found.shape.end());
    size_t elements = 1;
    for (size_t d = 1; d < f.dims.size(); ++d) elements *= f.dims[d];
    f.row_bytes = f.type.text ? 0 : elements * c10::elementSize(f.type.dtype);
    fields_.push_back(std::move(f));
  }
}

void FileReader::fail(size_t k, const int64_t* rows, size_t count) {
  const H5FieldInfo& f = (*info_)[k];
  const std::string field = "field '" + f.name + "' (" + f.path + ")";
  std::string why = error_stack_text();
  if (why.empty()) why = "no reason given";
  // A file rewritten in place under an open handle reads as damage (its chunks moved): say so.
  H5Dataset::FileStamp now{};
  try {
    now = stamp_of(file_);
  } catch (const Error&) {  // gone: changed too
  }
  if (!swmr_ && !same(now, stamp_)) {
    throw Error(changed(file_, stamp_, now) + " while this process had it open: reading " +
                field + " failed (" + why + "). Fix: build the dataset again from the file as "
                "it is now (restart the job); write a new file and rename it into place rather "
                "than rewriting one that a job reads");
  }
  const auto [first, last] = failed_rows(k, rows, count);
  const bool chunk = !f.chunk.empty();
  throw Error(error_prefix(file_) + field + ": " + (chunk ? "its chunk of " : "") +
              rows_text(first, last) + " cannot be read (" + why + "). Fix: the file is "
              "damaged or cut short" + (chunk ? " (a chunk that does not decompress?)" : "") +
              ": write or copy it again");
}

// libhdf5 says that a read failed, not where: read the selection's chunks one at a time, and
// the first that fails alone is the damaged one. Only after a failure, so the cost is no
// matter. Without chunks, or when none fails alone, the rows asked for.
std::pair<int64_t, int64_t> FileReader::failed_rows(size_t k, const int64_t* rows,
                                                    size_t count) {
  const H5FieldInfo& f = (*info_)[k];
  if (f.chunk.empty() || f.chunk[0] <= 0) return {rows[0], rows[count - 1]};
  const int64_t per_chunk = f.chunk[0];
  const int64_t end = static_cast<int64_t>(fields_[k].dims[0]);
  auto chunk_of = [&](int64_t row) {
    const int64_t first = row / per_chunk * per_chunk;
    return std::make_pair(first, std::min(first + per_chunk, end) - 1);
  };
  if (chunk_of(rows[0]) == chunk_of(rows[count - 1])) return chunk_of(rows[0]);
  std::vector<uint8_t> scratch;
  for (size_t i = 0; i < count;) {
    const auto [first, last] = chunk_of(rows[i]);
    if (!reads(k, first, last, scratch)) return {first, last};
    while (i < count && rows[i] <= last) ++i;
  }
  return {rows[0], rows[count - 1]};
}

bool FileReader::reads(size_t k, int64_t first, int64_t last, std::vector<uint8_t>& scratch) {
  OpenField& f = fields_[k];
  if (f.type.text) return true;  // a text field's reads are of one row: never asked
  std::vector<hsize_t> start(f.dims.size(), 0), count(f.dims);
  start[0] = static_cast<hsize_t>(first);
  count[0] = static_cast<hsize_t>(last - first + 1);
  scratch.resize(count[0] * f.row_bytes);
  Handle memory(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr),
                H5Sclose);
  const bool ok =
      H5Sselect_hyperslab(f.file_space.get(), H5S_SELECT_SET, start.data(), nullptr,
                          count.data(), nullptr) >= 0 &&
      H5Dread(f.dataset.get(), f.type.memory.get(), memory.get(), f.file_space.get(),
              H5P_DEFAULT, scratch.data()) >= 0;
  error_stack_text();  // cleared: the first failure's text is the one reported
  return ok;
}

void FileReader::read_rows(size_t k, const int64_t* rows, size_t count, void* out) {
  quiet_hdf5_errors();  // this thread may not be the one that opened the file
  OpenField& f = fields_[k];
  const size_t rank = f.dims.size();
  std::vector<hsize_t> start(rank, 0), block(f.dims), ones(rank, 1);
  hid_t space = f.file_space.get();
  // One hyperslab per run of consecutive rows, OR-ed into one selection.
  H5S_seloper_t op = H5S_SELECT_SET;
  for (size_t i = 0; i < count;) {
    size_t run = 1;
    while (i + run < count && rows[i + run] == rows[i] + static_cast<int64_t>(run)) ++run;
    start[0] = static_cast<hsize_t>(rows[i]);
    block[0] = run;
    if (H5Sselect_hyperslab(space, op, start.data(), nullptr, ones.data(), block.data()) < 0) {
      fail(k, rows + i, 1);
    }
    op = H5S_SELECT_OR;
    i += run;
  }
  std::vector<hsize_t> memory_dims(f.dims);
  memory_dims[0] = count;
  Handle memory(H5Screate_simple(static_cast<int>(rank), memory_dims.data(), nullptr), H5Sclose);
  if (H5Dread(f.dataset.get(), f.type.memory.get(), memory.get(), space, H5P_DEFAULT, out) < 0) {
    fail(k, rows, count);
  }
}

std::string FileReader::read_text(size_t k, int64_t row) {
  quiet_hdf5_errors();
  OpenField& f = fields_[k];
  const hsize_t start = static_cast<hsize_t>(row), one = 1;
  hid_t space = f.file_space.get();
  if (H5Sselect_hyperslab(space, H5S_SELECT_SET, &start, nullptr, &one, nullptr) < 0) {
    fail(k, &row, 1);
  }
  Handle memory(H5Screate_simple(1, &one, nullptr), H5Sclose);
  if (f.type.variable_length) {
    char* value = nullptr;
    if (H5Dread(f.dataset.get(), f.type.memory.get(), memory.get(), space, H5P_DEFAULT,
                &value) < 0) {
      fail(k, &row, 1);
    }
    std::string text = value != nullptr ? std::string(value) : std::string();
#if H5_VERSION_GE(1, 12, 0)
    H5Treclaim(f.type.memory.get(), memory.get(), H5P_DEFAULT, &value);
#else
    H5Dvlen_reclaim(f.type.memory.get(), memory.get(), H5P_DEFAULT, &value);
#endif
    return text;
  }
  std::string text(f.type.fixed_size, '\0');
  if (H5Dread(f.dataset.get(), f.type.memory.get(), memory.get(), space, H5P_DEFAULT,
              text.data()) < 0) {
    fail(k, &row, 1);
  }
  text.resize(unpadded_length(text.data(), text.size(), f.type.padding));
  return text;
}

}  // namespace mploader::hdf5::detail
