// Parsing .npy headers and mapping the data read-only.
#include "ipc/unique_fd.h"
#include "util/errors.h"

#include <mploader/errors.h>
#include <mploader/npy.h>

#include <ATen/ATen.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <regex>

namespace mploader {
namespace {

void check_row(const std::string& path, int64_t i, int64_t rows) {
  if (i < 0 || i >= rows) {
    throw OptionError("i", detail::message("NpyArray", "no row " + std::to_string(i) + " in " +
                                                           path + ", which has " +
                                                           std::to_string(rows),
                                           "Give a row from 0 to rows() - 1"));
  }
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error("mploader: " + path + ": " + what);
}

at::ScalarType dtype_of(const std::string& path, const std::string& descr) {
  if (descr.size() < 3 || (descr[0] == '>' && descr.substr(1) != "u1" && descr.substr(1) != "i1" &&
                           descr.substr(1) != "b1")) {
    fail(path, "dtype '" + descr + "' is big-endian or unknown; save it little-endian "
               "(numpy: a.astype(a.dtype.newbyteorder('<')))");
  }
  const std::string t = descr.substr(1);
  if (t == "b1") return at::kBool;
  if (t == "u1") return at::kByte;
  if (t == "i1") return at::kChar;
  if (t == "i2") return at::kShort;
  if (t == "i4") return at::kInt;
  if (t == "i8") return at::kLong;
  if (t == "f2") return at::kHalf;
  if (t == "f4") return at::kFloat;
  if (t == "f8") return at::kDouble;
  fail(path, "dtype '" + descr + "' has no libtorch equivalent here; convert it (for example "
             "to int64 or float32) before saving");
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text;
  for (int64_t d : shape) text += (text.empty() ? "" : ", ") + std::to_string(d);
  return text;
}

struct Header {
  std::string descr;
  bool fortran = false;
  std::vector<int64_t> shape;
  uint64_t data_offset = 0;
};

Header parse_header(const std::string& path, const uint8_t* bytes, uint64_t size) {
  if (size < 10 || std::memcmp(bytes, "\x93NUMPY", 6) != 0) {
    fail(path, "not a .npy file (no \\x93NUMPY magic)");
  }
  const int major = bytes[6];
  const uint64_t length_bytes = major == 1 ? 2 : 4;
  if (major < 1 || major > 3 || size < 8 + length_bytes) {
    fail(path, "unsupported .npy format version " + std::to_string(major));
  }
  uint64_t length = 0;
  for (uint64_t i = 0; i < length_bytes; ++i) length |= uint64_t{bytes[8 + i]} << (8 * i);
  Header h;
  h.data_offset = 8 + length_bytes + length;
  if (h.data_offset > size) fail(path, "truncated header");
  const std::string text(reinterpret_cast<const char*>(bytes) + 8 + length_bytes, length);
  std::smatch m;
  if (!std::regex_search(text, m, std::regex("'descr':\\s*'([^']+)'"))) {
    fail(path, "header has no 'descr': " + text);
  }
  h.descr = m[1];
  h.fortran = std::regex_search(text, std::regex("'fortran_order':\\s*True"));
  if (!std::regex_search(text, m, std::regex("'shape':\\s*\\(([^)]*)\\)"))) {
    fail(path, "header has no 'shape': " + text);
  }
  const std::string dims = m[1];  // "60000, 28, 28" or "5," or ""
  if (dims.find_first_not_of("0123456789, L") != std::string::npos) {  // L: Python 2's longs
    fail(path, "the header's shape (" + dims + ") is not a tuple of whole numbers; the header "
               "is damaged: write the file again");
  }
  for (size_t at = dims.find_first_of("0123456789"); at != std::string::npos;
       at = dims.find_first_of("0123456789", dims.find_first_not_of("0123456789", at))) {
    const std::string digits = dims.substr(at, dims.find_first_not_of("0123456789", at) - at);
    if (digits.size() > 18) {  // more would not fit int64 (std::stoll throws out_of_range)
      fail(path, "the header's shape (" + dims + ") has a dimension of " + digits +
                     ", more than any array holds; the header is damaged: write the file again");
    }
    h.shape.push_back(std::stoll(digits));
  }
  return h;
}

}  // namespace

NpyArray::NpyArray(const std::string& path) : path_(path) {
  ipc::UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) fail(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  fstat(fd.get(), &st);
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  void* map = size > 0 ? mmap(nullptr, size, PROT_READ, MAP_SHARED, fd.get(), 0) : MAP_FAILED;
  const int error = errno;
  fd.reset();  // the mapping keeps the file
  if (map == MAP_FAILED) fail(path, size == 0 ? "empty file" : std::strerror(error));
  mapping_ = std::shared_ptr<const void>(map, [size](const void* p) {
    munmap(const_cast<void*>(p), size);
  });
  const auto* bytes = static_cast<const uint8_t*>(map);
  const Header h = parse_header(path, bytes, size);
  if (h.fortran) fail(path, "Fortran-ordered arrays are not supported; save np.ascontiguousarray(a)");
  dtype_ = dtype_of(path, h.descr);
  shape_ = h.shape;
  // Every product checked: a damaged shape must not wrap around to a size the file has.
  bool wraps = false;
  row_bytes_ = c10::elementSize(dtype_);
  for (size_t i = 1; i < shape_.size(); ++i) {
    wraps |= __builtin_mul_overflow(row_bytes_, static_cast<uint64_t>(shape_[i]), &row_bytes_);
  }
  uint64_t needed = 0;
  wraps |= __builtin_mul_overflow(row_bytes_, static_cast<uint64_t>(rows()), &needed);
  wraps |= __builtin_add_overflow(needed, h.data_offset, &needed);
  if (wraps) {
    fail(path, "the header's shape (" + shape_text(shape_) + ") of '" + h.descr + "' is more "
               "than 2^64 bytes; the header is damaged: write the file again");
  }
  if (size < needed) {
    fail(path, "truncated: the header promises " + std::to_string(needed) + " bytes, the file has " +
                   std::to_string(size) + "; write it again");
  }
  data_ = bytes + h.data_offset;
}

at::Tensor NpyArray::row(int64_t i) const {
  check_row(path_, i, rows());
  std::vector<int64_t> sizes(shape_.begin() + (shape_.empty() ? 0 : 1), shape_.end());
  auto keep = mapping_;
  return at::from_blob(const_cast<uint8_t*>(data_) + row_bytes_ * static_cast<uint64_t>(i), sizes,
                       [keep](void*) {}, at::TensorOptions().dtype(dtype_));
}

void NpyArray::copy_row(int64_t i, void* out) const {
  check_row(path_, i, rows());
  std::memcpy(out, data_ + row_bytes_ * static_cast<uint64_t>(i), row_bytes_);
}

at::Tensor NpyArray::tensor() const {
  auto keep = mapping_;
  return at::from_blob(const_cast<uint8_t*>(data_), shape_, [keep](void*) {},
                       at::TensorOptions().dtype(dtype_));
}

}  // namespace mploader
