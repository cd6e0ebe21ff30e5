// An HDF5 file open in one process, and the reads of its fields' rows: by hyperslab, straight
// into the memory given (a ring slot's field, or a fresh tensor).
#pragma once

#include "hdf5/h5_handle.h"
#include "hdf5/h5_types.h"

#include <mploader/hdf5/h5_dataset.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mploader::hdf5::detail {

class FileReader {
 public:
  // Opens `file` and each field, and checks that they are still what `info` (the metadata the
  // dataset was built with) says, and that the file is unchanged since `stamp` unless reading
  // it with SWMR. Throws Error naming the file and what changed.
  FileReader(const std::string& file, const std::vector<H5FieldInfo>& info,
             const H5DatasetOptions& options, const H5Dataset::FileStamp& stamp);

  // Reads rows[0..count) of numeric field `k`, strictly increasing, into `out` (count rows,
  // C-contiguous): one selection of the runs of consecutive rows.
  void read_rows(size_t k, const int64_t* rows, size_t count, void* out);
  // Row `row` of text field `k`.
  std::string read_text(size_t k, int64_t row);
  // Bytes of one row of numeric field `k`.
  size_t row_bytes(size_t k) const { return fields_[k].row_bytes; }

 private:
  struct OpenField {
    Handle dataset;
    Handle file_space;
    TypeMapping type;
    std::vector<hsize_t> dims;
    size_t row_bytes = 0;
  };
  // Throws the Error of a failed read of rows[0..count) of field `k`: the file changed after
  // the dataset was built, or the rows of the chunk that does not read.
  [[noreturn]] void fail(size_t k, const int64_t* rows, size_t count);
  std::pair<int64_t, int64_t> failed_rows(size_t k, const int64_t* rows, size_t count);
  bool reads(size_t k, int64_t first, int64_t last, std::vector<uint8_t>& scratch);

  std::string file_;
  const std::vector<H5FieldInfo>* info_;
  H5Dataset::FileStamp stamp_;
  bool swmr_ = false;
  Handle file_handle_;
  std::vector<OpenField> fields_;
};

}  // namespace mploader::hdf5::detail
