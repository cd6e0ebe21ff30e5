// Values out of Arrow arrays. The leaf's buffer is read at its element offset; types whose
// element matches the tensor's are one memcpy, the others are converted element by element.
#include "parquet/pq_values.h"

#include <arrow/array.h>
#include <arrow/type.h>
#include <arrow/util/bit_util.h>
#include <c10/util/Half.h>

#include <cstring>

namespace mploader::parquet::detail {
namespace {

using arrow::Type;

template <typename From, typename To>
void widen(const uint8_t* src, int64_t count, uint8_t* dst) {
  const From* in = reinterpret_cast<const From*>(src);
  To* out = reinterpret_cast<To*>(dst);
  for (int64_t i = 0; i < count; ++i) out[i] = static_cast<To>(in[i]);
}

// Bytes of one element in the tensor: uint16 and uint32 are widened, bits become bytes.
size_t output_width(Type::type id, const arrow::DataType& type) {
  switch (id) {
    case Type::BOOL: return 1;
    case Type::UINT16: return 4;
    case Type::UINT32: return 8;
    default: return static_cast<size_t>(
        static_cast<const arrow::FixedWidthType&>(type).bit_width() / 8);
  }
}

// The dense copy, nulls aside: what the element's buffer holds, in the tensor's type.
void copy_dense(const arrow::Array& leaf, int64_t start, int64_t count, uint8_t* dst) {
  const arrow::ArrayData& data = *leaf.data();
  const int64_t first = data.offset + start;
  if (count <= 0) return;
  if (data.buffers.size() < 2 || data.buffers[1] == nullptr) {  // no values at all: zeros
    std::memset(dst, 0, static_cast<size_t>(count) * output_width(leaf.type_id(), *leaf.type()));
    return;
  }
  if (leaf.type_id() == Type::BOOL) {
    const uint8_t* bits = data.buffers[1]->data();
    for (int64_t i = 0; i < count; ++i) dst[i] = arrow::bit_util::GetBit(bits, first + i);
    return;
  }
  const int width = static_cast<const arrow::FixedWidthType&>(*leaf.type()).bit_width() / 8;
  const uint8_t* src = data.buffers[1]->data() + first * width;
  switch (leaf.type_id()) {
    case Type::UINT16: return widen<uint16_t, int32_t>(src, count, dst);
    case Type::UINT32: return widen<uint32_t, int64_t>(src, count, dst);
    default: std::memcpy(dst, src, static_cast<size_t>(count * width));
  }
}

}  // namespace

ColumnData column_data(std::shared_ptr<arrow::Array> array) {
  ColumnData c;
  c.array = std::move(array);
  c.values = c.array.get();
  if (c.array->type_id() == Type::DICTIONARY) {
    c.dictionary = true;
    c.values = static_cast<const arrow::DictionaryArray&>(*c.array).dictionary().get();
  }
  // Nulls may sit in the rows, the dictionary, or the elements of a list: look at all.
  c.has_nulls = c.array->null_count() > 0 || c.values->null_count() > 0;
  const arrow::Array* a = c.values;
  while (!c.has_nulls) {
    if (a->type_id() == Type::FIXED_SIZE_LIST) {
      a = static_cast<const arrow::FixedSizeListArray&>(*a).values().get();
    } else if (a->type_id() == Type::LIST) {
      a = static_cast<const arrow::ListArray&>(*a).values().get();
    } else if (a->type_id() == Type::LARGE_LIST) {
      a = static_cast<const arrow::LargeListArray&>(*a).values().get();
    } else {
      break;
    }
    c.has_nulls = a->null_count() > 0;
  }
  return c;
}

int64_t value_row(const ColumnData& c, int64_t row) {
  if (c.array->IsNull(row)) return -1;
  if (!c.dictionary) return row;
  const int64_t index = static_cast<const arrow::DictionaryArray&>(*c.array).GetValueIndex(row);
  return c.values->IsNull(index) ? -1 : index;
}

LeafRange leaf_range(const arrow::Array& values, int64_t row, int64_t rows) {
  LeafRange r{&values, row, rows};
  while (r.leaf->type_id() == Type::FIXED_SIZE_LIST) {
    const auto& list = static_cast<const arrow::FixedSizeListArray&>(*r.leaf);
    r.start = list.value_offset(r.start);
    r.count *= list.list_type()->list_size();
    r.leaf = list.values().get();
  }
  return r;
}

bool copy_elements(const LeafRange& range, at::ScalarType dtype, const double* fill,
                   uint8_t* dst) {
  const arrow::Array& leaf = *range.leaf;
  if (leaf.null_count() == 0) {
    copy_dense(leaf, range.start, range.count, dst);
    return true;
  }
  const size_t size = c10::elementSize(dtype);
  for (int64_t i = 0; i < range.count; ++i, dst += size) {
    if (!leaf.IsNull(range.start + i)) {
      copy_dense(leaf, range.start + i, 1, dst);
    } else if (fill != nullptr) {
      fill_elements(dtype, *fill, 1, dst);
    } else {
      return false;
    }
  }
  return true;
}

void fill_elements(at::ScalarType dtype, double value, int64_t count, uint8_t* dst) {
  auto fill = [&](auto typed) {
    using T = decltype(typed);
    const T v = static_cast<T>(value);
    for (int64_t i = 0; i < count; ++i) std::memcpy(dst + i * sizeof(T), &v, sizeof(T));
  };
  switch (dtype) {
    case at::kChar: return fill(int8_t{});
    case at::kByte: return fill(uint8_t{});
    case at::kShort: return fill(int16_t{});
    case at::kInt: return fill(int32_t{});
    case at::kLong: return fill(int64_t{});
    case at::kHalf: return fill(c10::Half{});
    case at::kFloat: return fill(float{});
    case at::kDouble: return fill(double{});
    case at::kBool: return fill(bool{});
    default: return;  // leaf_dtype() gives no other
  }
}

std::string_view text_view(const arrow::Array& values, int64_t row) {
  switch (values.type_id()) {
    case Type::STRING:
    case Type::BINARY:
      return static_cast<const arrow::BinaryArray&>(values).GetView(row);
    case Type::LARGE_STRING:
    case Type::LARGE_BINARY:
      return static_cast<const arrow::LargeBinaryArray&>(values).GetView(row);
    case Type::STRING_VIEW:
    case Type::BINARY_VIEW:
      return static_cast<const arrow::BinaryViewArray&>(values).GetView(row);
    case Type::FIXED_SIZE_BINARY:
      return static_cast<const arrow::FixedSizeBinaryArray&>(values).GetView(row);
    default:
      return {};  // plan_column() admits no other type as text
  }
}

LeafRange list_range(const arrow::Array& values, int64_t row) {
  if (values.type_id() == Type::LARGE_LIST) {
    const auto& list = static_cast<const arrow::LargeListArray&>(values);
    return {list.values().get(), list.value_offset(row), list.value_length(row)};
  }
  const auto& list = static_cast<const arrow::ListArray&>(values);
  return {list.values().get(), list.value_offset(row), list.value_length(row)};
}

bool image_bytes(const arrow::Array& values, int64_t row, std::string_view& out) {
  if (values.IsNull(row)) return false;
  if (values.type_id() != Type::STRUCT) {
    out = text_view(values, row);
    return true;
  }
  // field() slices the child to the struct's offset; its buffers outlive the boxed array.
  const std::shared_ptr<arrow::Array> bytes =
      static_cast<const arrow::StructArray&>(values).GetFieldByName("bytes");
  if (bytes->IsNull(row)) return false;
  out = text_view(*bytes, row);
  return true;
}

}  // namespace mploader::parquet::detail
