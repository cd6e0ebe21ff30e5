// Which tensor dtype (or text) each HDF5 element type becomes, and the memory type libhdf5
// converts the file's elements to while reading.
#pragma once

#include "hdf5/h5_handle.h"

#include <c10/core/ScalarType.h>

#include <string>

namespace mploader::hdf5::detail {

struct TypeMapping {
  std::string file_type;        // for messages and H5FieldInfo: "uint16", "vlen string (utf-8)"
  at::ScalarType dtype = at::kByte;
  bool text = false;            // a string type: a text field
  bool variable_length = false;  // a variable-length string (else fixed `fixed_size` bytes)
  H5T_str_t padding = H5T_STR_NULLTERM;
  size_t fixed_size = 0;
  Handle memory;                // the type rows are read as
  std::string refused;          // non-empty: why this type cannot be read, and what to do
};

// The mapping of file type `type` (an open datatype id). Never throws for an unsupported type:
// `refused` says why.
TypeMapping map_type(hid_t type);

// Bytes `fixed` holds once its padding is taken off (NULLTERM: up to the first NUL; NULLPAD:
// without trailing NULs; SPACEPAD: without trailing spaces).
size_t unpadded_length(const char* fixed, size_t size, H5T_str_t padding);

}  // namespace mploader::hdf5::detail
