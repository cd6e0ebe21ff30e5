// H5Dataset: the metadata from the probe process, the file opened by each process that reads,
// and rows read straight into the batch.
#include <mploader/errors.h>
#include <mploader/hdf5/h5_dataset.h>
#include <mploader/sample_writer.h>

#include "hdf5/h5_meta.h"
#include "hdf5/h5_probe.h"
#include "hdf5/h5_reader.h"
#include "util/errors.h"

#include <ATen/ATen.h>

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <set>

namespace mploader::hdf5 {

using detail::error_prefix;

// The reader of the process that opened the file: a copy made by fork must not use it.
struct H5Dataset::ProcessFile {
  pid_t pid;
  detail::FileReader reader;
};

std::vector<int64_t> H5FieldInfo::row_shape() const {
  if (shape.empty()) return {};
  return std::vector<int64_t>(shape.begin() + 1, shape.end());
}

H5Dataset::H5Dataset(std::string file, std::vector<H5Field> fields, H5DatasetOptions options)
    : file_(std::move(file)), fields_(std::move(fields)), options_(options) {
  check_fields();
  stamp_ = detail::stamp_of(file_);
  info_ = detail::probe_metadata(file_, fields_, options_.swmr_read, options_.probe_timeout_s);
  rows_ = detail::common_rows(file_, info_);
  for (const H5FieldInfo& f : info_) has_text_ = has_text_ || f.text;
}

H5Dataset::H5Dataset(std::string file, std::vector<H5Field> fields, H5DatasetOptions options,
                     std::vector<H5FieldInfo> info, FileStamp stamp)
    : file_(std::move(file)), fields_(std::move(fields)), options_(options),
      info_(std::move(info)), stamp_(stamp) {
  check_fields();
  if (info_.size() != fields_.size()) {
    throw Error(error_prefix(file_) + "the recipe describes " +
                std::to_string(info_.size()) + " fields for " + std::to_string(fields_.size()) +
                " names. Fix: pass the text recipe() returned, unchanged");
  }
  for (size_t k = 0; k < info_.size(); ++k) {
    const H5FieldInfo& f = info_[k];
    const bool bad_shape = f.shape.empty() || std::any_of(f.shape.begin(), f.shape.end(),
                                                          [](int64_t d) { return d < 0; });
    if (f.name != fields_[k].name || f.path != fields_[k].path || bad_shape) {
      throw Error(error_prefix(file_) + "the recipe's metadata of field '" +
                  fields_[k].name + "' does not match it. Fix: pass the text recipe() "
                  "returned, unchanged");
    }
    has_text_ = has_text_ || f.text;
  }
  rows_ = detail::common_rows(file_, info_);
}

H5Dataset::H5Dataset(const H5Dataset& other)
    : Dataset(other), file_(other.file_), fields_(other.fields_), options_(other.options_),
      info_(other.info_), stamp_(other.stamp_), rows_(other.rows_), has_text_(other.has_text_) {}

H5Dataset::~H5Dataset() = default;

void H5Dataset::check_fields() {
  if (fields_.empty()) {
    throw Error(error_prefix(file_) + "no fields. Fix: name at least one "
                "{field name, dataset path}, e.g. {\"image\", \"/images\"}");
  }
  std::set<std::string> names;
  for (const H5Field& f : fields_) {
    if (f.name.empty() || !names.insert(f.name).second) {
      throw Error(error_prefix(file_) + "field name '" + f.name + "' (" + f.path +
                  ") is " + (f.name.empty() ? "empty" : "given twice") +
                  ". Fix: give every field a name of its own");
    }
  }
  if (options_.chunk_cache_bytes < 0 || !(options_.probe_timeout_s > 0)) {
    throw Error(error_prefix(file_) + "chunk_cache_bytes is " +
                std::to_string(options_.chunk_cache_bytes) + " and probe_timeout_s " +
                std::to_string(options_.probe_timeout_s) +
                ". Fix: chunk_cache_bytes >= 0 (0: no cache), probe_timeout_s > 0");
  }
}

H5Dataset::ProcessFile& H5Dataset::open() {
  const pid_t self = ::getpid();
  // A reader inherited through fork belongs to the parent's open file: closing it here closes
  // only this process's copies of the descriptors; the file is then opened as a file of ours.
  if (open_ != nullptr && open_->pid != self) open_.reset();
  if (open_ == nullptr) {
    open_.reset(new ProcessFile{self, detail::FileReader(file_, info_, options_, stamp_)});
  }
  return *open_;
}

bool H5Dataset::is_open_here() const { return open_ != nullptr && open_->pid == ::getpid(); }

namespace {
void check_index(const std::string& file, int64_t index, int64_t rows) {
  if (index < 0 || index >= rows) {
    throw OptionError("index", mploader::detail::message(
                                   "H5Dataset", file + ": index " + std::to_string(index) +
                                                    " is outside its " + std::to_string(rows) +
                                                    " rows",
                                   "Give an index from 0 to size() - 1"));
  }
}

// write() and write_batch() fill a declared layout, which a dataset with text fields has not.
void check_no_text(const std::string& file, bool has_text) {
  if (has_text) {
    throw Error(mploader::detail::message("H5Dataset",
                                         file + ": it has text fields, so it has no sample "
                                                "layout to write into",
                                         "Read its samples with get()"));
  }
}

}  // namespace

Sample H5Dataset::get(int64_t index) {
  check_index(file_, index, rows_);
  detail::FileReader& reader = open().reader;
  Sample sample;
  for (size_t k = 0; k < info_.size(); ++k) {
    const H5FieldInfo& f = info_[k];
    if (f.text) {
      sample.set_text(f.name, reader.read_text(k, index));
    } else {
      at::Tensor row = at::empty(f.row_shape(), at::TensorOptions().dtype(f.dtype));
      reader.read_rows(k, &index, 1, row.data_ptr());
      sample.set(f.name, std::move(row));
    }
  }
  return sample;
}

std::optional<SampleLayout> H5Dataset::sample_layout() const {
  if (has_text_) return std::nullopt;
  SampleLayout layout;
  for (const H5FieldInfo& f : info_) layout.push_back({f.name, f.dtype, f.row_shape()});
  return layout;
}

void H5Dataset::write(int64_t index, SampleWriter& out) {
  check_no_text(file_, has_text_);
  check_index(file_, index, rows_);
  detail::FileReader& reader = open().reader;
  for (size_t k = 0; k < info_.size(); ++k) reader.read_rows(k, &index, 1, out.bytes(k));
}

void H5Dataset::write_batch(const int64_t* indices, size_t count, BatchWriter& out) {
  check_no_text(file_, has_text_);
  if (count == 0) return;
  for (size_t r = 0; r < count; ++r) check_index(file_, indices[r], rows_);
  if (std::is_sorted(indices, indices + count, std::less_equal<int64_t>())) {
    // Strictly increasing (a sequential sampler): straight into the slot.
    detail::FileReader& reader = open().reader;
    for (size_t k = 0; k < info_.size(); ++k) reader.read_rows(k, indices, count, out.bytes(k));
    return;
  }
  read_sorted_batch(indices, count, out);
}

// Shuffled (or repeated) rows: read the distinct rows in file order into scratch memory with
// one selection, then place each in its batch row: one copy, and libhdf5 walks each chunk once.
void H5Dataset::read_sorted_batch(const int64_t* indices, size_t count, BatchWriter& out) {
  std::vector<int64_t> sorted(indices, indices + count);
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  detail::FileReader& reader = open().reader;
  for (size_t k = 0; k < info_.size(); ++k) {
    const size_t row_bytes = reader.row_bytes(k);
    scratch_.resize(sorted.size() * row_bytes);
    reader.read_rows(k, sorted.data(), sorted.size(), scratch_.data());
    auto* dst = static_cast<uint8_t*>(out.bytes(k));
    for (size_t r = 0; r < count; ++r) {
      const size_t at = static_cast<size_t>(
          std::lower_bound(sorted.begin(), sorted.end(), indices[r]) - sorted.begin());
      std::memcpy(dst + r * row_bytes, scratch_.data() + at * row_bytes, row_bytes);
    }
  }
}

}  // namespace mploader::hdf5
