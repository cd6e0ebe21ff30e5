// shards/: tensors as .npy members of a pack, and back. The writer's form only: NumPy format
// 1.0, C order, little-endian; dtypes bool, uint8, int8, int16, int32, int64, float16,
// float32 and float64 (NumPy has no bfloat16).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace mploader::shards::detail {

// The .npy file of `tensor` (made contiguous). Throws OptionError("dataset", ...) naming
// `field` for a dtype NumPy cannot hold.
std::string npy_bytes(const at::Tensor& tensor, const std::string& field);

// The tensor of a .npy member; throws BadSample naming `name` for bytes that are no .npy of the
// writer's form, or fewer than its shape needs.
at::Tensor npy_tensor(const uint8_t* data, size_t size, const std::string& name);

}  // namespace mploader::shards::detail
