// formats/: datasets over file formats.
//
// Parsing .npy headers and mapping the data read-only.
#include "ipc/unique_fd.h"

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
  for (size_t at = dims.find_first_of("0123456789"); at != std::string::npos;
       at = dims.find_first_of("0123456789", dims.find_first_not_of("0123456789", at))) {
    h.shape.push_back(std::stoll(dims.substr(at)));
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
  uint64_t elements = 1;
  for (size_t i = 1; i < shape_.size(); ++i) elements *= static_cast<uint64_t>(shape_[i]);
  row_bytes_ = elements * c10::elementSize(dtype_);
  const uint64_t needed = h.data_offset + row_bytes_ * static_cast<uint64_t>(rows());
  if (size < needed) {
    fail(path, "truncated: the header promises " + std::to_string(needed) + " bytes, the file has " +
                   std::to_string(size) + "; write it again");
  }
  data_ = bytes + h.data_offset;
}

at::Tensor NpyArray::row(int64_t i) const {
  if (i < 0 || i >= rows()) {
    throw std::out_of_range("mploader: row " + std::to_string(i) + " of " + path_ + ", which has " +
                            std::to_string(rows()));
  }
  std::vector<int64_t> sizes(shape_.begin() + (shape_.empty() ? 0 : 1), shape_.end());
  auto keep = mapping_;
  return at::from_blob(const_cast<uint8_t*>(data_) + row_bytes_ * static_cast<uint64_t>(i), sizes,
                       [keep](void*) {}, at::TensorOptions().dtype(dtype_));
}

void NpyArray::copy_row(int64_t i, void* out) const {
  if (i < 0 || i >= rows()) {
    throw std::out_of_range("mploader: row " + std::to_string(i) + " of " + path_ + ", which has " +
                            std::to_string(rows()));
  }
  std::memcpy(out, data_ + row_bytes_ * static_cast<uint64_t>(i), row_bytes_);
}

at::Tensor NpyArray::tensor() const {
  auto keep = mapping_;
  return at::from_blob(const_cast<uint8_t*>(data_), shape_, [keep](void*) {},
                       at::TensorOptions().dtype(dtype_));
}

NpyDataset::NpyDataset(const std::vector<std::pair<std::string, std::string>>& arrays) {
  if (arrays.empty()) throw Error("mploader: NpyDataset needs at least one (name, path) array");
  for (const auto& [name, path] : arrays) arrays_.emplace_back(name, NpyArray(path));
  rows_ = static_cast<size_t>(arrays_.front().second.rows());
  for (const auto& [name, array] : arrays_) {
    if (static_cast<size_t>(array.rows()) != rows_) {
      throw Error("mploader: NpyDataset: '" + name + "' (" + array.path() + ") has " +
                  std::to_string(array.rows()) + " rows but '" + arrays_.front().first + "' has " +
                  std::to_string(rows_) + "; every array needs one row per sample");
    }
  }
}

Sample NpyDataset::get(int64_t index) {
  Sample s;
  for (const auto& [name, array] : arrays_) s.set(name, array.row(index));
  return s;
}

}  // namespace mploader

namespace mploader {

std::optional<SampleLayout> NpyDataset::sample_layout() const {
  SampleLayout layout;
  for (const auto& [name, array] : arrays_) {
    const auto& shape = array.shape();
    layout.push_back({name, array.dtype(),
                      std::vector<int64_t>(shape.begin() + (shape.empty() ? 0 : 1), shape.end())});
  }
  return layout;
}

void NpyDataset::write(int64_t index, SampleWriter& out) {
  for (size_t k = 0; k < arrays_.size(); ++k) arrays_[k].second.copy_row(index, out.bytes(k));
}

void NpyDataset::write_batch(const int64_t* indices, size_t count, BatchWriter& out) {
  for (size_t k = 0; k < arrays_.size(); ++k) {
    const NpyArray& array = arrays_[k].second;
    auto* dst = static_cast<uint8_t*>(out.bytes(k));
    for (size_t r = 0; r < count; ++r) array.copy_row(indices[r], dst + r * array.row_bytes());
  }
}

}  // namespace mploader
