// What the built-in collators share: the checks each sample passes, and the copy of a sample's
// tensor into its row of the batch. Defined in core/collate.cc.
#pragma once

#include <mploader/collate.h>

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mploader::detail::collate {

// Every sample must have the same names, in the same order, as the first; fill() relies on it
// to find a sample's tensors by position. Throws SampleError naming the sample.
void check_same_names(const std::vector<Sample>& samples);

// The checks every sample passes before any of its tensors is copied (not empty, every tensor
// dense and not quantized). Throws SampleError naming the sample and the tensor.
void check_sample(size_t row, const Sample& sample);

// Why `t` cannot be copied byte for byte into a batch, and the fix; empty when it can.
std::string not_copyable(const at::Tensor& t);

// Copies `src` into `dst` (same shape).
void copy_into(at::Tensor dst, const at::Tensor& src);

// Copies `src` into row `row` of `batch` ([B, ...], contiguous); a shorter `src` (padding)
// fills the front of the row.
void copy_into_row(at::Tensor& batch, int64_t row, const at::Tensor& src);

// "cannot <verb> 'x': sample 3 has shape [2] but sample 0 has [3]; <advice>"
[[noreturn]] void throw_shape_mismatch(const char* verb, const std::string& name, size_t row,
                                       at::IntArrayRef shape, at::IntArrayRef first_shape,
                                       const char* advice);

// "cannot <verb> 'x': sample 2 has dtype Float but sample 0 has Long; <advice>". A batch's
// tensor takes sample 0's dtype; converting another sample's values into it could truncate
// them (1.5 -> 1), so a mismatch is refused, as torch.stack into a typed batch refuses it.
[[noreturn]] void throw_dtype_mismatch(const char* verb, const std::string& name, size_t row,
                                       at::ScalarType dtype, at::ScalarType first_dtype);

// OptionError("samples", ...): `who` ("stack_collate", "pad_collate") was given no sample.
[[noreturn]] void throw_empty_batch(const char* who);

}  // namespace mploader::detail::collate
