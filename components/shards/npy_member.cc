// .npy members (npy_member.h): the 10-byte preamble, the header dict, the C-order data.
#include "shards/npy_member.h"
#include "shards/sample_decode.h"
#include "shards/text.h"

#include <mploader/errors.h>

#include <ATen/ATen.h>

#include <cstring>
#include <utility>
#include <vector>

namespace mploader::shards::detail {
namespace {

const std::pair<at::ScalarType, const char*> kDescrs[] = {
    {at::kBool, "|b1"},  {at::kByte, "|u1"},  {at::kChar, "|i1"},   {at::kShort, "<i2"},
    {at::kInt, "<i4"},   {at::kLong, "<i8"},  {at::kHalf, "<f2"},   {at::kFloat, "<f4"},
    {at::kDouble, "<f8"}};

[[noreturn]] void not_npy(const std::string& name, const std::string& why) {
  throw BadSample("member " + in_quotes(name) + " is not a .npy file mploader-pack wrote: " + why);
}

// The quoted value after `key` in the header dict, or the text up to the closing parenthesis
// for the shape.
std::string value_after(const std::string& header, const std::string& key, char open, char close,
                        const std::string& name) {
  const size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) not_npy(name, "its header has no '" + key + "'");
  const size_t a = header.find(open, k + key.size() + 2);
  const size_t b = a == std::string::npos ? a : header.find(close, a + 1);
  if (b == std::string::npos) not_npy(name, "its header's '" + key + "' is cut short");
  return header.substr(a + 1, b - a - 1);
}

std::vector<int64_t> shape_of(const std::string& text, const std::string& name) {
  std::vector<int64_t> shape;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == ',')) ++i;
    if (i == text.size()) break;
    int64_t v = 0;
    size_t digits = 0;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9' && digits < 18; ++i, ++digits) {
      v = v * 10 + (text[i] - '0');
    }
    if (digits == 0 || (i < text.size() && text[i] != ',' && text[i] != ' ')) {
      not_npy(name, "its shape (" + text + ") is not a list of sizes");
    }
    shape.push_back(v);
  }
  return shape;
}

}  // namespace

std::string npy_bytes(const at::Tensor& tensor, const std::string& field) {
  const char* descr = nullptr;
  for (const auto& [type, d] : kDescrs) descr = type == tensor.scalar_type() ? d : descr;
  if (descr == nullptr) {
    throw OptionError("dataset", mploader::detail::message(
        "mploader-pack", "field " + in_quotes(field) + " is a tensor of " +
                             std::string(c10::toString(tensor.scalar_type())) +
                             ", which a .npy member cannot hold",
        "Convert it in the dataset (bfloat16 to float32, say)"));
  }
  std::string shape;
  for (int64_t s : tensor.sizes()) shape += std::to_string(s) + ", ";
  if (tensor.dim() > 1) shape.resize(shape.size() - 2);
  std::string header = std::string("{'descr': '") + descr +
                       "', 'fortran_order': False, 'shape': (" + shape + "), }";
  header.append(63 - (10 + header.size()) % 64, ' ');
  header.push_back('\n');
  const at::Tensor data = tensor.contiguous();
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(header.size() & 0xff));
  out.push_back(static_cast<char>(header.size() >> 8));
  out += header;
  out.append(static_cast<const char*>(data.data_ptr()), data.nbytes());
  return out;
}

at::Tensor npy_tensor(const uint8_t* data, size_t size, const std::string& name) {
  if (size < 10 || std::memcmp(data, "\x93NUMPY\x01\x00", 8) != 0) {
    not_npy(name, "it does not start with the NumPy 1.0 magic");
  }
  const size_t header_bytes = data[8] | (size_t{data[9]} << 8);
  if (10 + header_bytes > size) not_npy(name, "its header runs past its " + std::to_string(size) + " bytes");
  const std::string header(reinterpret_cast<const char*>(data) + 10, header_bytes);
  const std::string descr = value_after(header, "descr", '\'', '\'', name);
  at::ScalarType type = at::kByte;
  bool known = false;
  for (const auto& [t, d] : kDescrs) {
    if (descr == d) type = t, known = true;
  }
  if (!known) not_npy(name, "its dtype '" + descr + "' is not one the writer uses");
  if (header.find("'fortran_order': False") == std::string::npos) {
    not_npy(name, "it is not in C order");
  }
  const std::vector<int64_t> shape =
      shape_of(value_after(header, "shape", '(', ')', name), name);
  at::Tensor out = at::empty(shape, type);
  const size_t want = out.nbytes();
  if (size - 10 - header_bytes != want) {
    not_npy(name, "its shape needs " + std::to_string(want) + " bytes of data but it holds " +
                      std::to_string(size - 10 - header_bytes));
  }
  if (want > 0) std::memcpy(out.data_ptr(), data + 10 + header_bytes, want);
  return out;
}

}  // namespace mploader::shards::detail
