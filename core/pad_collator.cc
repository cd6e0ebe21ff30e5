// The pad collator (pad_collate): variable-length tensors padded to the batch's largest (or to
// a multiple), with each sample's lengths or sizes beside them.
#include <mploader/collate.h>
#include <mploader/errors.h>

#include "core/collate_rows.h"
#include "util/errors.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <sstream>

namespace mploader {
namespace {

using detail::collate::check_same_names;
using detail::collate::check_sample;
using detail::collate::copy_into_row;
using detail::collate::throw_dtype_mismatch;
using detail::collate::throw_empty_batch;
using detail::collate::throw_shape_mismatch;

int64_t round_up(int64_t n, int64_t multiple) { return (n + multiple - 1) / multiple * multiple; }

// Copies `src` into row `row` of `batch` at index 0 of every dimension; the rest of the row
// keeps its padding. A whole-row memcpy when only the first dimension is shorter.
void copy_into_corner(at::Tensor& batch, int64_t row, const at::Tensor& src) {
  if (src.dim() == 0 || src.sizes().slice(1) == batch.sizes().slice(2)) {
    copy_into_row(batch, row, src);
    return;
  }
  at::Tensor dst = batch[row];
  for (int64_t d = 0; d < src.dim(); ++d) dst = dst.narrow(d, 0, src.size(d));
  dst.copy_(src);
}

// The tensor at position `field` of `sample` (layout() checked every sample's order).
const at::Tensor& tensor_at(const Sample& sample, size_t field) {
  return (sample.begin() + static_cast<std::ptrdiff_t>(field))->second;
}

class PadCollator : public Collator {
 public:
  explicit PadCollator(PadOptions options) : o_(std::move(options)) {}

  std::vector<TensorLayout> layout(const std::vector<Sample>& samples) override {
    if (samples.empty()) throw_empty_batch("pad_collate");
    for (size_t i = 0; i < samples.size(); ++i) check_sample(i, samples[i]);
    check_same_names(samples);
    std::vector<TensorLayout> out;
    const int64_t batch = static_cast<int64_t>(samples.size());
    for (size_t field = 0; field < samples[0].size(); ++field) {
      const auto& [name, t0] = *(samples[0].begin() + static_cast<std::ptrdiff_t>(field));
      std::vector<int64_t> shape{batch};
      for (int64_t d : padded_shape(samples, field)) shape.push_back(d);
      out.push_back({name, t0.scalar_type(), std::move(shape)});
      if (t0.dim() == 0) continue;
      out.push_back(extra_layout(name, batch, t0.dim()));
      if (samples[0].contains(out.back().name)) throw_name_taken(name, out.back().name);
    }
    return out;
  }

  // layout() checked names, ranks and dtypes; each padded tensor is followed by its extra.
  void fill(const std::vector<Sample>& samples, std::vector<at::Tensor>& outputs) override {
    const auto rows = static_cast<int64_t>(samples.size());
    size_t k = 0;
    for (size_t field = 0; field < samples[0].size(); ++field) {
      at::Tensor& out = outputs[k++];
      if (tensor_at(samples[0], field).dim() == 0) {
        for (int64_t i = 0; i < rows; ++i) copy_into_row(out, i, tensor_at(samples[i], field));
        continue;
      }
      int64_t* sizes = outputs[k++].data_ptr<int64_t>();
      out.fill_(o_.pad_value);
      for (int64_t i = 0; i < rows; ++i) {
        const at::Tensor& t = tensor_at(samples[i], field);
        copy_into_corner(out, i, t);
        if (o_.dims == PadDims::kFirst) {
          sizes[i] = t.size(0);
        } else {
          for (int64_t d = 0; d < t.dim(); ++d) sizes[i * t.dim() + d] = t.size(d);
        }
      }
    }
  }

  // Sizes vary by batch: twice the first sample's (rounded) size leaves room for most
  // batches; the rest travel in overflow segments.
  std::optional<size_t> estimate_batch_bytes(const Sample& sample, size_t batch_size) override {
    check_sample(0, sample);
    size_t bytes = 0;
    for (const auto& item : sample) {
      const at::Tensor& t = item.second;
      size_t elements = 1;
      for (int64_t d = 0; d < t.dim(); ++d) {
        const bool padded = d == 0 || o_.dims == PadDims::kAll;
        elements *= static_cast<size_t>(padded ? round_up(t.size(d), o_.pad_to_multiple_of)
                                               : t.size(d));
      }
      bytes += 2 * elements * t.element_size() * batch_size + 128;
      const size_t extra_columns = o_.dims == PadDims::kAll ? std::max<int64_t>(t.dim(), 1) : 1;
      bytes += 8 * batch_size * extra_columns;
    }
    return bytes;
  }

  std::optional<std::string> recipe() const override {
    std::ostringstream r;
    r.precision(17);
    r << "pad " << o_.pad_value << ' ' << o_.lengths_suffix;
    if (o_.dims == PadDims::kAll) r << "\ndims all";
    if (o_.sizes_suffix != PadOptions().sizes_suffix) r << "\nsizes " << o_.sizes_suffix;
    if (o_.pad_to_multiple_of != 1) r << "\nmultiple " << o_.pad_to_multiple_of;
    return r.str();
  }

 private:
  // The shape (batch dimension excluded) every sample's tensor `field` is padded to. Throws
  // when a sample's rank or dtype differs from sample 0's, or (kFirst) a later dimension.
  std::vector<int64_t> padded_shape(const std::vector<Sample>& samples, size_t field) const {
    const auto& [name, t0] = *(samples[0].begin() + static_cast<std::ptrdiff_t>(field));
    std::vector<int64_t> shape = t0.sizes().vec();
    for (size_t i = 1; i < samples.size(); ++i) {
      const at::Tensor& t = tensor_at(samples[i], field);
      if (t.dim() != t0.dim()) {
        throw_shape_mismatch("pad", name, i, t.sizes(), t0.sizes(),
                             "every sample's tensor must have the same number of dimensions");
      }
      if (t.scalar_type() != t0.scalar_type()) {
        throw_dtype_mismatch("pad", name, i, t.scalar_type(), t0.scalar_type());
      }
      for (int64_t d = 0; d < t.dim(); ++d) {
        if (d > 0 && o_.dims == PadDims::kFirst && t.size(d) != t0.size(d)) {
          throw_shape_mismatch("pad", name, i, t.sizes(), t0.sizes(),
                               "only the first dimension may differ (PadOptions::dims = "
                               "PadDims::kAll pads every dimension)");
        }
        shape[d] = std::max(shape[d], t.size(d));
      }
    }
    const size_t rounded =
        o_.dims == PadDims::kAll ? shape.size() : std::min<size_t>(1, shape.size());
    for (size_t d = 0; d < rounded; ++d) shape[d] = round_up(shape[d], o_.pad_to_multiple_of);
    return shape;
  }

  // The lengths (kFirst) or sizes (kAll) tensor that follows padded tensor `name`.
  TensorLayout extra_layout(const std::string& name, int64_t batch, int64_t dims) const {
    if (o_.dims == PadDims::kFirst) return {name + o_.lengths_suffix, at::kLong, {batch}};
    return {name + o_.sizes_suffix, at::kLong, {batch, dims}};
  }

  [[noreturn]] void throw_name_taken(const std::string& name, const std::string& extra) const {
    const bool first = o_.dims == PadDims::kFirst;
    throw OptionError("collate",
                      detail::message("pad_collate",
                                      "cannot pad '" + name + "': its " +
                                          (first ? "lengths" : "sizes") + " tensor '" + extra +
                                          "' has the name of one of the sample's own tensors",
                                      std::string("Rename that tensor or set PadOptions::") +
                                          (first ? "lengths_suffix" : "sizes_suffix")));
  }

  PadOptions o_;
};

// Option checks of pad_collate(PadOptions): each message names the field and the fix.
void check_pad_options(const PadOptions& o) {
  if (o.pad_to_multiple_of < 1) {
    throw OptionError("collate", "PadOptions::pad_to_multiple_of must be 1 or more, got " +
                                     std::to_string(o.pad_to_multiple_of) +
                                     "; 1 pads to the batch's largest size");
  }
  const bool first = o.dims == PadDims::kFirst;
  const std::string& used = first ? o.lengths_suffix : o.sizes_suffix;
  if (used.empty()) {
    throw OptionError("collate", std::string("PadOptions::") +
                                     (first ? "lengths_suffix" : "sizes_suffix") +
                                     " is empty, so each padded tensor and its " +
                                     (first ? "lengths" : "sizes") + " would share one name; " +
                                     "use a suffix such as '" + (first ? "_lengths" : "_sizes") +
                                     "'");
  }
  for (const std::string* suffix : {&o.lengths_suffix, &o.sizes_suffix}) {
    if (suffix->find_first_of("\r\n") != std::string::npos) {
      throw OptionError("collate", "PadOptions suffix '" + *suffix +
                                       "' holds a line break, which a spawned worker's recipe "
                                       "cannot carry; use a suffix on one line");
    }
  }
}

}  // namespace

std::shared_ptr<Collator> pad_collate(double pad_value, std::string lengths_suffix) {
  PadOptions options;
  options.pad_value = pad_value;
  options.lengths_suffix = std::move(lengths_suffix);
  return pad_collate(options);
}

std::shared_ptr<Collator> pad_collate(const PadOptions& options) {
  check_pad_options(options);
  return std::make_shared<PadCollator>(options);
}

}  // namespace mploader
