// Dataset's defaults (mploader/dataset.h): get() through write() for a dataset that writes in
// place, write() through get() for one that returns samples, and write_batch() row by row.
#include <mploader/dataset.h>

#include "core/exception_text.h"
#include "util/errors.h"

#include <mploader/errors.h>

#include <ATen/ATen.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace mploader {

namespace {
// A dataset that declares a layout but implements neither get() nor write() would have the
// two defaults call each other; this notices the second call on the same thread.
thread_local bool in_default_get = false;

std::string write_who(int64_t index) { return "Dataset::write(" + std::to_string(index) + ")"; }
}  // namespace

Sample Dataset::get(int64_t index) {
  std::optional<SampleLayout> layout = sample_layout();
  if (!layout || in_default_get) {
    throw Error(detail::message("Dataset", "this dataset implements neither get() nor write()",
                                "Implement get(), or sample_layout() and write()"));
  }
  std::vector<at::Tensor> tensors;
  std::vector<uint8_t*> bases;
  std::vector<size_t> field_bytes;
  for (const FieldLayout& f : *layout) {
    tensors.push_back(at::empty(f.shape, at::TensorOptions().dtype(f.dtype)));
    bases.push_back(static_cast<uint8_t*>(tensors.back().data_ptr()));
    field_bytes.push_back(f.nbytes());
  }
  SampleWriter writer(*layout, bases.data(), field_bytes.data(), 0);
  in_default_get = true;
  try {
    write(index, writer);
  } catch (...) {
    in_default_get = false;
    throw;
  }
  in_default_get = false;
  writer.check_complete();
  Sample sample;
  for (size_t k = 0; k < layout->size(); ++k) sample.set((*layout)[k].name, tensors[k]);
  return sample;
}

void Dataset::write(int64_t index, SampleWriter& out) {
  const Sample sample = get(index);
  if (!sample.texts().empty()) {
    throw Error(detail::message(write_who(index),
                                "get() returned text field '" + sample.texts()[0].first +
                                    "', but the in-place path (sample_layout()) carries "
                                    "tensors only",
                                "Return nullopt from sample_layout() so that the batch is "
                                "collated from get()"));
  }
  if (sample.size() != out.num_fields()) {
    throw Error(detail::message(write_who(index),
                                "get() returned " + std::to_string(sample.size()) +
                                    " tensors but sample_layout() declares " +
                                    std::to_string(out.num_fields()),
                                "Declare exactly the tensors get() returns"));
  }
  for (size_t k = 0; k < out.num_fields(); ++k) {
    const at::Tensor* value = sample.find(out.field(k).name);
    if (value == nullptr) {
      throw Error(detail::message(write_who(index),
                                  "get() returned no tensor '" + out.field(k).name +
                                      "', which sample_layout() declares; it returned " +
                                      detail::quoted_names(sample.names()),
                                  "Declare exactly the tensors get() returns"));
    }
    out.copy(k, *value);
  }
}

void Dataset::write_batch(const int64_t* indices, size_t count, BatchWriter& out) {
  for (size_t r = 0; r < count; ++r) {
    out.current_row_ = r;
    if (out.hook_ != nullptr && !out.hook_(out.hook_context_, r)) return;
    SampleWriter row = out.row(r);
    write(indices[r], row);
    row.check_complete();
  }
  out.current_row_ = count;
  out.mark_all_written();
}

}  // namespace mploader
