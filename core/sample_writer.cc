// FieldWriter, SampleWriter and BatchWriter (mploader/sample_writer.h), and the defaults that
// let a dataset implement get(), write(), or both (mploader/dataset.h).
#include <mploader/dataset.h>

#include "core/exception_text.h"
#include "util/errors.h"

#include <mploader/errors.h>

#include <ATen/ATen.h>

#include <cstring>
#include <stdexcept>

namespace mploader {
namespace {

using detail::quoted_names;
using detail::shape_text;

std::string describe(const FieldLayout& f) {
  return "'" + f.name + "' (" + std::string(c10::toString(f.dtype)) + " " + shape_text(f.shape) +
         ")";
}

size_t find_field(const SampleLayout& layout, std::string_view name) {
  for (size_t k = 0; k < layout.size(); ++k) {
    if (layout[k].name == name) return k;
  }
  std::vector<std::string> names;
  for (const FieldLayout& f : layout) names.push_back(f.name);
  throw OptionError("name", detail::message("SampleWriter", "no field '" + std::string(name) +
                                                                "' in the sample layout; "
                                                                "sample_layout() declares " +
                                                                quoted_names(names),
                                            "Ask for a field by a name sample_layout() declares"));
}

void check_dtype_of(const FieldLayout& f, at::ScalarType wanted) {
  if (f.dtype == wanted) return;
  throw OptionError("T", detail::message("SampleWriter", "field " + describe(f) +
                                                             " was asked for as " +
                                                             std::string(c10::toString(wanted)),
                                         "Ask for data<T>() with T of its dtype, or change the "
                                         "dtype in sample_layout()"));
}

void throw_unwritten(const SampleLayout& layout, uint64_t written, const char* unit) {
  std::string missing;
  for (size_t k = 0; k < layout.size(); ++k) {
    if ((written >> k & 1u) == 0) missing += (missing.empty() ? "" : ", ") + describe(layout[k]);
  }
  throw Error(detail::message("SampleWriter",
                              std::string("the dataset returned without writing ") + unit + " " +
                                  missing + ", whose memory would keep an earlier batch's bytes",
                              "Write every field that sample_layout() declares (bytes(), "
                              "data<T>(), tensor() or copy()), or leave the field out of it"));
}

void check_field_index(const SampleLayout& layout, size_t k) {
  if (k >= layout.size()) {
    throw OptionError("field", detail::message("SampleWriter",
                                               "field " + std::to_string(k) +
                                                   " asked for, but sample_layout() declares " +
                                                   std::to_string(layout.size()),
                                               "Ask for a field from 0 to " +
                                                   std::to_string(layout.size()) + " - 1"));
  }
}


uint64_t all_fields(size_t n) { return n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1; }

// Copies `value` into the memory of `field` (`base`, contiguous), after checking dtype and shape.
void copy_checked(const FieldLayout& field, uint8_t* base, const at::Tensor& value) {
  if (!value.defined() || value.scalar_type() != field.dtype ||
      value.sizes() != at::IntArrayRef(field.shape)) {
    throw OptionError(
        "value",
        detail::message("SampleWriter",
                        "cannot write " +
                            (value.defined() ? std::string(c10::toString(value.scalar_type())) +
                                                   " " + shape_text(value.sizes())
                                             : std::string("an undefined tensor")) +
                            " into field " + describe(field),
                        "Give it the dtype and shape sample_layout() declares, or declare what "
                        "get() returns"));
  }
  if (value.is_contiguous() && value.device().is_cpu() && value.layout() == at::kStrided &&
      !value.is_conj() && !value.is_neg()) {  // lazy conj/neg views: only copy_ applies them
    std::memcpy(base, value.data_ptr(), value.nbytes());
    return;
  }
  at::from_blob(base, field.shape, at::TensorOptions().dtype(field.dtype)).copy_(value);
}

}  // namespace

size_t FieldLayout::nbytes() const {
  size_t n = c10::elementSize(dtype);
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

SampleLayout layout_of(const Sample& sample) {
  SampleLayout out;
  for (const auto& [name, t] : sample) {
    const at::IntArrayRef sizes = t.sizes();
    out.push_back({name, t.scalar_type(), std::vector<int64_t>(sizes.begin(), sizes.end())});
  }
  return out;
}

FieldWriter::FieldWriter(const SampleLayout& layout, uint8_t* const* bases,
                         const size_t* field_bytes, size_t row, int64_t batch_rows,
                         const char* unit)
    : layout_(&layout), bases_(bases), field_bytes_(field_bytes), row_(row),
      batch_rows_(batch_rows), unit_(unit) {}

size_t FieldWriter::index_of(std::string_view name) const { return find_field(*layout_, name); }

void FieldWriter::check_field(size_t k) const { check_field_index(*layout_, k); }

void FieldWriter::check_dtype(size_t k, at::ScalarType wanted) const {
  check_field(k);
  check_dtype_of((*layout_)[k], wanted);
}

void* FieldWriter::bytes(size_t k) {
  check_field(k);
  written_ |= uint64_t{1} << k;
  return bases_[k] + row_ * field_bytes_[k];
}

at::Tensor FieldWriter::tensor(size_t k) {
  void* base = bytes(k);
  std::vector<int64_t> shape;
  if (batch_rows_ >= 0) shape.push_back(batch_rows_);
  shape.insert(shape.end(), field(k).shape.begin(), field(k).shape.end());
  return at::from_blob(base, shape, at::TensorOptions().dtype(field(k).dtype));
}

void FieldWriter::mark_all_written() { written_ = all_fields(layout_->size()); }

void FieldWriter::check_complete() const {
  if (written_ != all_fields(layout_->size())) throw_unwritten(*layout_, written_, unit_);
}

SampleWriter::SampleWriter(const SampleLayout& layout, uint8_t* const* bases,
                           const size_t* field_bytes, size_t row)
    : FieldWriter(layout, bases, field_bytes, row, -1, "field") {}

void SampleWriter::copy(size_t k, const at::Tensor& value) {
  check_field(k);
  copy_checked(field(k), static_cast<uint8_t*>(bytes(k)), value);
}

BatchWriter::BatchWriter(const SampleLayout& layout, uint8_t* const* bases,
                         const size_t* field_bytes, size_t rows)
    : FieldWriter(layout, bases, field_bytes, 0, static_cast<int64_t>(rows), "batch field"),
      rows_(rows), current_row_(rows) {}

}  // namespace mploader
