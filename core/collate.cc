// Built-in collators: stack and a user function, and the row checks and copies every collator
// shares (core/collate_rows.h). The pad collator is in core/pad_collator.cc.
#include <mploader/collate.h>
#include <mploader/errors.h>

#include "core/collate_rows.h"
#include "core/exception_text.h"
#include "util/errors.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace mploader {
namespace detail::collate {

using mploader::detail::quoted_names;
using mploader::detail::shape_text;

namespace {

// True when `a` and `b` name the same tensors in the same order. Compares in place: this runs
// for every sample of every batch, and names() would allocate.
bool same_names(const Sample& a, const Sample& b) {
  if (a.size() != b.size()) return false;
  for (auto x = a.begin(), y = b.begin(); x != a.end(); ++x, ++y) {
    if (x->first != y->first) return false;
  }
  return true;
}

// The names in `a` that `b` lacks.
std::vector<std::string> missing_from(const std::vector<std::string>& a,
                                      const std::vector<std::string>& b) {
  std::vector<std::string> out;
  for (const std::string& n : a) {
    if (std::find(b.begin(), b.end(), n) == b.end()) out.push_back(n);
  }
  return out;
}

// Sample `row` names other tensors than sample `first`, or the same ones in another order.
[[noreturn]] void throw_names_differ(size_t row, const std::vector<std::string>& names,
                                     size_t first, const std::vector<std::string>& first_names) {
  const auto only_here = missing_from(names, first_names);
  const auto only_first = missing_from(first_names, names);
  throw SampleError(row, [=](const SampleError::NameOf& name) {
    const std::string a = name(row), b = name(first);
    if (only_here.empty() && only_first.empty()) {
      return a + " has the tensors of " + b + " in another order (" + quoted_names(names) + " vs " +
             quoted_names(first_names) + "); Dataset::get must set them in one order for every sample";
    }
    return a + " and " + b + " name different tensors: only in " + a + ": " + quoted_names(only_here) +
           "; only in " + b + ": " + quoted_names(only_first) +
           ". Dataset::get must return the same names for every sample";
  });
}

}  // namespace

// Every sample must have the same names, in the same order, as the first; fill() relies on it
// to find a sample's tensors by position.
void check_same_names(const std::vector<Sample>& samples) {
  const Sample& first = samples.at(0);
  for (size_t i = 1; i < samples.size(); ++i) {
    if (!same_names(samples[i], first)) {
      throw_names_differ(i, samples[i].names(), 0, first.names());
    }
  }
}

// Why `t` cannot be copied byte for byte into a batch, and the fix; empty when it can. Only a
// dense (strided) tensor keeps its values in one block of memory, and a quantized tensor's
// bytes mean nothing without its scale and zero point.
std::string not_copyable(const at::Tensor& t) {
  if (t.layout() == at::kStrided && !t.is_quantized()) return {};
  std::ostringstream s;
  if (t.layout() != at::kStrided) {
    s << "is " << (t.is_sparse() || t.is_sparse_csr() ? "sparse" : "not dense") << " (layout "
      << t.layout() << "), and only dense tensors can be copied into a batch: call .to_dense() "
      << "on it";
  } else {
    s << "is quantized (" << t.scalar_type() << "), and its bytes alone lose the scale and "
      << "zero point: call .dequantize() on it, or return .int_repr() and the scale as tensors";
  }
  return s.str();
}

// The checks every sample passes before any of its tensors is copied.
void check_sample(size_t row, const Sample& sample) {
  if (sample.empty()) {
    throw SampleError(row, [row](const SampleError::NameOf& name) {
      return name(row) + " has no tensors: Dataset::get returned an empty Sample; return at "
                         "least one named tensor, as in {{\"x\", tensor}}";
    });
  }
  for (const auto& item : sample) {
    std::string why = not_copyable(item.second);
    if (why.empty()) continue;
    throw SampleError(row, [row, tensor = item.first, why](const SampleError::NameOf& name) {
      return "tensor '" + tensor + "' of " + name(row) + " " + why + " in Dataset::get";
    });
  }
}

// Whether `src`'s bytes are its values, ready for a memcpy into a tensor of `dtype`: dense,
// on the CPU, of that dtype, and no lazy conjugate or negation (a view whose memory holds the
// values before conj() or neg(); only ATen's copy applies them).
bool bytes_are_values(const at::Tensor& src, at::ScalarType dtype) {
  return src.is_contiguous() && src.scalar_type() == dtype && src.device().is_cpu() &&
         !src.is_conj() && !src.is_neg();
}

// Copies `src` into `dst` (same shape); memcpy when the bytes are the values.
void copy_into(at::Tensor dst, const at::Tensor& src) {
  if (bytes_are_values(src, dst.scalar_type())) {
    std::memcpy(dst.data_ptr(), src.data_ptr(), src.nbytes());
  } else {
    dst.copy_(src);
  }
}

// Copies `src` into row `row` of `batch` ([B, ...], contiguous); a shorter `src` (padding)
// fills the front of the row. A plain memcpy at the row's offset when it can: indexing
// batch[row] builds a view, one libtorch op per sample per tensor, which measured as a large
// share of a worker's time on small samples.
void copy_into_row(at::Tensor& batch, int64_t row, const at::Tensor& src) {
  const auto row_bytes = batch.nbytes() / static_cast<size_t>(batch.size(0));
  if (bytes_are_values(src, batch.scalar_type()) && src.nbytes() <= row_bytes &&
      batch.is_contiguous()) {
    std::memcpy(static_cast<char*>(batch.data_ptr()) + row * row_bytes, src.data_ptr(),
                src.nbytes());
    return;
  }
  at::Tensor dst = batch[row];
  if (src.dim() > 0 && dst.dim() > 0 && src.size(0) < dst.size(0)) {
    dst = dst.narrow(0, 0, src.size(0));
  }
  dst.copy_(src);
}

// "cannot stack 'x': sample 3 has shape [2] but sample 0 has [3]; <advice>"
[[noreturn]] void throw_shape_mismatch(const char* verb, const std::string& name, size_t row,
                                       at::IntArrayRef shape, at::IntArrayRef first_shape,
                                       const char* advice) {
  const std::string has = shape_text(shape), first_has = shape_text(first_shape);
  throw SampleError(row, [=](const SampleError::NameOf& sample) {
    return std::string("cannot ") + verb + " '" + name + "': " + sample(row) + " has shape " +
           has + " but " + sample(0) + " has " + first_has + "; " + advice;
  });
}

void throw_dtype_mismatch(const char* verb, const std::string& name, size_t row,
                          at::ScalarType dtype, at::ScalarType first_dtype) {
  const std::string has = c10::toString(dtype), first_has = c10::toString(first_dtype);
  throw SampleError(row, [=](const SampleError::NameOf& sample) {
    return std::string("cannot ") + verb + " '" + name + "': " + sample(row) + " has dtype " +
           has + " but " + sample(0) + " has " + first_has +
           "; return one dtype for every sample (convert with .to(), or float() a Python "
           "number), as torch.stack refuses mixed dtypes too";
  });
}

void throw_empty_batch(const char* who) {
  throw OptionError("samples", message(who, "cannot collate an empty batch (0 samples)",
                                       "Give a batch of one sample or more"));
}

}  // namespace detail::collate

namespace {

using detail::collate::check_same_names;
using detail::collate::check_sample;
using detail::collate::copy_into;
using detail::collate::copy_into_row;
using detail::collate::throw_names_differ;
using detail::collate::not_copyable;
using detail::collate::throw_dtype_mismatch;
using detail::collate::throw_empty_batch;
using detail::collate::throw_shape_mismatch;

[[noreturn]] void throw_stack_mismatch(const std::string& name, size_t row,
                                       at::IntArrayRef shape, at::IntArrayRef first_shape) {
  throw_shape_mismatch("stack", name, row, shape, first_shape,
                       "use mploader::pad_collate() for variable-length data");
}

class StackCollator : public Collator {
 public:
  std::vector<TensorLayout> layout(const std::vector<Sample>& samples) override {
    if (samples.empty()) throw_empty_batch("stack_collate");
    for (size_t i = 0; i < samples.size(); ++i) check_sample(i, samples[i]);
    check_same_names(samples);
    for (const auto& [name, t0] : samples[0]) {
      for (size_t i = 1; i < samples.size(); ++i) {
        const at::Tensor& t = samples[i][name];
        if (t.sizes() != t0.sizes()) throw_stack_mismatch(name, i, t.sizes(), t0.sizes());
        if (t.scalar_type() != t0.scalar_type()) {
          throw_dtype_mismatch("stack", name, i, t.scalar_type(), t0.scalar_type());
        }
      }
    }
    return layout_from_first(samples[0], samples.size());
  }

  // layout() checked that every sample names the same tensors in the same order.
  void fill(const std::vector<Sample>& samples, std::vector<at::Tensor>& outputs) override {
    for (size_t i = 0; i < samples.size(); ++i) {
      size_t k = 0;
      for (const auto& item : samples[i]) {
        copy_into_row(outputs[k++], static_cast<int64_t>(i), item.second);
      }
    }
  }

  bool streams() const override { return true; }

  std::vector<TensorLayout> layout_from_first(const Sample& first, size_t batch_size) override {
    if (batch_size == 0) throw_empty_batch("stack_collate");
    check_sample(0, first);
    std::vector<TensorLayout> out;
    for (const auto& [name, t] : first) {
      std::vector<int64_t> shape{static_cast<int64_t>(batch_size)};
      shape.insert(shape.end(), t.sizes().begin(), t.sizes().end());
      out.push_back({name, t.scalar_type(), std::move(shape)});
    }
    return out;
  }

  void fill_row(size_t row, const Sample& sample, const std::vector<TensorLayout>& layout,
                std::vector<at::Tensor>& outputs) override {
    check_sample(row, sample);
    bool same = sample.size() == layout.size();
    for (size_t k = 0; same && k < layout.size(); ++k) {
      same = (sample.begin() + static_cast<std::ptrdiff_t>(k))->first == layout[k].name;
    }
    if (!same) {
      std::vector<std::string> first_names;
      for (const TensorLayout& t : layout) first_names.push_back(t.name);
      throw_names_differ(row, sample.names(), 0, first_names);
    }
    size_t k = 0;
    for (const auto& [name, t] : sample) {
      const at::IntArrayRef first_shape = at::IntArrayRef(layout[k].shape).slice(1);
      if (t.sizes() != first_shape) throw_stack_mismatch(name, row, t.sizes(), first_shape);
      if (t.scalar_type() != layout[k].dtype) {
        throw_dtype_mismatch("stack", name, row, t.scalar_type(), layout[k].dtype);
      }
      copy_into_row(outputs[k++], static_cast<int64_t>(row), t);
    }
  }

  std::optional<size_t> estimate_batch_bytes(const Sample& sample, size_t batch_size) override {
    check_sample(0, sample);  // nbytes() of a sparse tensor throws libtorch's own error
    size_t bytes = 0;
    for (const auto& item : sample) bytes += item.second.nbytes() * batch_size + 64;
    return bytes;
  }

  std::optional<std::vector<TensorLayout>> layout_for_rows(const SampleLayout& sample,
                                                           size_t batch_size) override {
    if (batch_size == 0) throw_empty_batch("stack_collate");
    std::vector<TensorLayout> out;
    out.reserve(sample.size());
    for (const FieldLayout& f : sample) {
      std::vector<int64_t> shape{static_cast<int64_t>(batch_size)};
      shape.insert(shape.end(), f.shape.begin(), f.shape.end());
      out.push_back({f.name, f.dtype, std::move(shape)});
    }
    return out;
  }

  std::optional<std::string> recipe() const override { return "stack"; }
};

class FunctionCollator : public Collator {
 public:
  explicit FunctionCollator(CollateFunction fn) : fn_(std::move(fn)) {}

  std::vector<TensorLayout> layout(const std::vector<Sample>& samples) override {
    result_ = fn_(samples);
    if (!result_.texts().empty()) {  // the samples' own text fields reach the batch as they are
      throw OptionError("collate",
                        detail::message("function_collate",
                                        "the collate function's batch has text field '" +
                                            result_.texts()[0].first +
                                            "'; it may return tensors only",
                                        "Leave text fields out of the batch it returns: the "
                                        "samples' own text fields reach the batch as they are"));
    }
    std::vector<TensorLayout> out;
    for (const auto& [name, t] : result_) {
      const std::string why = not_copyable(t);
      if (!why.empty()) {
        // `why` ends in what to do ("call .to_dense() on it").
        throw OptionError("collate", detail::message("function_collate",
                                                     "tensor '" + name +
                                                         "' of the collate function's batch " +
                                                         why + " before returning it",
                                                     ""));
      }
      out.push_back({name, t.scalar_type(), t.sizes().vec()});
    }
    return out;
  }

  void fill(const std::vector<Sample>&, std::vector<at::Tensor>& outputs) override {
    size_t k = 0;
    for (const auto& item : result_) copy_into(outputs[k++], item.second);
    result_ = TensorDict();
  }

 private:
  CollateFunction fn_;
  TensorDict result_;  // between layout() and fill(); workers are single-threaded
};

}  // namespace

SampleError::SampleError(size_t row, std::function<std::string(const NameOf&)> message)
    : Error(message([](size_t r) { return "sample " + std::to_string(r); })),
      row_(row),
      message_(std::move(message)) {}

std::string SampleError::message_for(const int64_t* indices, size_t count) const {
  return message_([&](size_t r) {
    return r < count ? "sample " + std::to_string(indices[r])
                     : "the sample in row " + std::to_string(r) + " of the batch";
  });
}

std::optional<size_t> Collator::estimate_batch_bytes(const Sample&, size_t) {
  return std::nullopt;
}

std::optional<std::vector<TensorLayout>> Collator::layout_for_rows(const SampleLayout&, size_t) {
  return std::nullopt;
}

namespace {

[[noreturn]] void throw_not_streaming(const char* who) {
  throw Error(detail::message(who, "this collator was asked to stream, but does not override it",
                              "A collator whose streams() is true overrides layout_from_first() "
                              "and fill_row(); any other returns false from streams()"));
}

}  // namespace

std::vector<TensorLayout> Collator::layout_from_first(const Sample&, size_t) {
  throw_not_streaming("Collator::layout_from_first");
}

void Collator::fill_row(size_t, const Sample&, const std::vector<TensorLayout>&,
                        std::vector<at::Tensor>&) {
  throw_not_streaming("Collator::fill_row");
}

std::shared_ptr<Collator> stack_collate() { return std::make_shared<StackCollator>(); }

std::shared_ptr<Collator> function_collate(CollateFunction fn) {
  return std::make_shared<FunctionCollator>(std::move(fn));
}

}  // namespace mploader
