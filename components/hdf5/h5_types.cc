// HDF5 element types to tensor dtypes. libhdf5 converts while reading (byte order, widening),
// so the memory type is what the slot holds and the copy into it is the read itself.
#include "hdf5/h5_types.h"

#include <cstring>
#include <string>

namespace mploader::hdf5::detail {
namespace {

Handle copy_type(hid_t type) { return Handle(H5Tcopy(type), H5Tclose); }

TypeMapping integer_mapping(hid_t type) {
  TypeMapping m;
  const size_t size = H5Tget_size(type);
  const bool is_signed = H5Tget_sign(type) == H5T_SGN_2;
  const std::string name = (is_signed ? "int" : "uint") + std::to_string(size * 8);
  m.file_type = name;
  if (is_signed) {
    switch (size) {
      case 1: m.dtype = at::kChar; m.memory = copy_type(H5T_NATIVE_INT8); return m;
      case 2: m.dtype = at::kShort; m.memory = copy_type(H5T_NATIVE_INT16); return m;
      case 4: m.dtype = at::kInt; m.memory = copy_type(H5T_NATIVE_INT32); return m;
      case 8: m.dtype = at::kLong; m.memory = copy_type(H5T_NATIVE_INT64); return m;
      default: break;
    }
  } else {
    // torch has no arithmetic on uint16/uint32: the next wider signed type holds every value.
    switch (size) {
      case 1: m.dtype = at::kByte; m.memory = copy_type(H5T_NATIVE_UINT8); return m;
      case 2:
        m.file_type += " (read as int32)";
        m.dtype = at::kInt;
        m.memory = copy_type(H5T_NATIVE_INT32);
        return m;
      case 4:
        m.file_type += " (read as int64)";
        m.dtype = at::kLong;
        m.memory = copy_type(H5T_NATIVE_INT64);
        return m;
      case 8:
        m.refused = "uint64 has no torch type that holds every value: store it as int64 (or "
                    "as uint32 or smaller, read as int64)";
        return m;
      default: break;
    }
  }
  m.refused = name + " is not a size torch has: store it as int8, int16, int32 or int64";
  return m;
}

// IEEE half precision: sign bit 15, 5 exponent bits at 10, 10 mantissa bits at 0, bias 15.
bool is_ieee_half(hid_t type) {
  size_t spos = 0, epos = 0, esize = 0, mpos = 0, msize = 0;
  if (H5Tget_fields(type, &spos, &epos, &esize, &mpos, &msize) < 0) return false;
  return spos == 15 && epos == 10 && esize == 5 && mpos == 0 && msize == 10 &&
         H5Tget_ebias(type) == 15;
}

TypeMapping float_mapping(hid_t type) {
  TypeMapping m;
  const size_t size = H5Tget_size(type);
  m.file_type = "float" + std::to_string(size * 8);
  if (size == 4) {
    m.dtype = at::kFloat;
    m.memory = copy_type(H5T_NATIVE_FLOAT);
  } else if (size == 8) {
    m.dtype = at::kDouble;
    m.memory = copy_type(H5T_NATIVE_DOUBLE);
  } else if (size == 2 && is_ieee_half(type)) {
    // libhdf5 1.10 has no native half type: the file's own, little-endian, is the slot's.
    m.dtype = at::kHalf;
    m.memory = copy_type(type);
    H5Tset_order(m.memory.get(), H5T_ORDER_LE);
  } else {
    m.refused = m.file_type + " (this layout) has no torch type: store float16, float32 or "
                "float64";
  }
  return m;
}

std::string member_name(hid_t type, unsigned i) {
  char* name = H5Tget_member_name(type, i);
  std::string out = name != nullptr ? name : "";
  if (name != nullptr) H5free_memory(name);
  return out;
}

// h5py stores bool as an enum of int8 {FALSE = 0, TRUE = 1}.
bool is_h5py_bool(hid_t type) {
  if (H5Tget_size(type) != 1 || H5Tget_nmembers(type) != 2) return false;
  for (unsigned i = 0; i < 2; ++i) {
    int8_t value = -1;
    if (H5Tget_member_value(type, i, &value) < 0) return false;
    const std::string name = member_name(type, i);
    if (!((name == "FALSE" && value == 0) || (name == "TRUE" && value == 1))) return false;
  }
  return true;
}

TypeMapping enum_mapping(hid_t type) {
  if (is_h5py_bool(type)) {
    TypeMapping m;
    m.file_type = "bool";
    m.dtype = at::kBool;
    m.memory = Handle(H5Tget_native_type(type, H5T_DIR_ASCEND), H5Tclose);
    return m;
  }
  Handle base(H5Tget_super(type), H5Tclose);
  TypeMapping m = integer_mapping(base.get());
  m.file_type = "enum of " + m.file_type;
  if (m.refused.empty() && H5Tget_size(base.get()) > 1 && H5Tget_sign(base.get()) != H5T_SGN_2) {
    m.refused = m.file_type + ": an enum reads as its base type, which must be int8 to int64 "
                "or uint8";
  }
  // Its values as the base integer type in native order: an enum converts only to an enum.
  if (m.refused.empty()) m.memory = Handle(H5Tget_native_type(type, H5T_DIR_ASCEND), H5Tclose);
  return m;
}

TypeMapping string_mapping(hid_t type) {
  TypeMapping m;
  m.text = true;
  m.variable_length = H5Tis_variable_str(type) > 0;
  m.padding = H5Tget_strpad(type);
  const bool utf8 = H5Tget_cset(type) == H5T_CSET_UTF8;
  if (m.variable_length) {
    m.file_type = std::string("vlen string (") + (utf8 ? "utf-8" : "ascii") + ")";
    m.memory = copy_type(H5T_C_S1);
    H5Tset_size(m.memory.get(), H5T_VARIABLE);
    H5Tset_cset(m.memory.get(), H5Tget_cset(type));
  } else {
    m.fixed_size = H5Tget_size(type);
    m.file_type = "string[" + std::to_string(m.fixed_size) + "]";
    m.memory = copy_type(type);
  }
  return m;
}

const char* class_name(H5T_class_t c) {
  switch (c) {
    case H5T_COMPOUND: return "compound";
    case H5T_ARRAY: return "array";
    case H5T_REFERENCE: return "reference";
    case H5T_OPAQUE: return "opaque";
    case H5T_VLEN: return "variable-length sequence";
    case H5T_BITFIELD: return "bitfield";
    case H5T_TIME: return "time";
    default: return "unknown";
  }
}

}  // namespace

TypeMapping map_type(hid_t type) {
  const H5T_class_t type_class = H5Tget_class(type);
  switch (type_class) {
    case H5T_INTEGER: return integer_mapping(type);
    case H5T_FLOAT: return float_mapping(type);
    case H5T_ENUM: return enum_mapping(type);
    case H5T_STRING: return string_mapping(type);
    default: break;
  }
  TypeMapping m;
  m.file_type = class_name(type_class);
  m.refused = m.file_type + " elements have no tensor type: store each member (column) as a "
              "dataset of its own, and name each as a field";
  return m;
}

size_t unpadded_length(const char* fixed, size_t size, H5T_str_t padding) {
  if (padding == H5T_STR_NULLTERM) {
    const void* nul = std::memchr(fixed, '\0', size);
    return nul != nullptr ? static_cast<size_t>(static_cast<const char*>(nul) - fixed) : size;
  }
  const char pad = padding == H5T_STR_SPACEPAD ? ' ' : '\0';
  while (size > 0 && fixed[size - 1] == pad) --size;
  return size;
}

}  // namespace mploader::hdf5::detail
