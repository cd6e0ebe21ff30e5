// Fashion-MNIST IDX reader: gzread through zlib, with every header field and the data length
// checked against what the file really holds.
#include "bench/workloads/fmnist_idx.h"

#include <ATen/ops/empty.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>
#include <sys/stat.h>

namespace bench {

namespace {

constexpr uint32_t kImagesMagic = 0x00000803;  // unsigned byte, 3 dimensions
constexpr uint32_t kLabelsMagic = 0x00000801;  // unsigned byte, 1 dimension
constexpr int64_t kSide = 28;

// An IDX file being read; errors name the file and end with the fix.
class IdxFile {
 public:
  explicit IdxFile(std::string path) : path_(std::move(path)) { open(); }
  ~IdxFile() {
    if (gz_ != nullptr) gzclose(gz_);
  }
  IdxFile(const IdxFile&) = delete;
  IdxFile& operator=(const IdxFile&) = delete;

  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(path_ + ": " + what +
                             ". Fix: reinstall the data (apt-get install --reinstall "
                             "dataset-fashion-mnist) or point --data-dir at a folder with "
                             "intact Fashion-MNIST .gz files");
  }
  uint32_t read_u32(const char* field);
  // Reads exactly `n` bytes into `out`; `what` says what they are, for the error message.
  void read_exactly(uint8_t* out, int64_t n, const std::string& what);
  // Checks that nothing follows the data the header announced.
  void expect_end();

 private:
  void open();
  int64_t read_some(uint8_t* out, int64_t n);

  std::string path_;
  gzFile gz_ = nullptr;
};

void IdxFile::open() {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) {
    const int err = errno;
    throw std::runtime_error(path_ + ": cannot open (" + std::strerror(err) +
                             "); expected the gzipped Fashion-MNIST IDX file there. Fix: "
                             "apt-get install dataset-fashion-mnist, or pass --data-dir DIR "
                             "with the four *-ubyte.gz files");
  }
  if (!S_ISREG(st.st_mode)) fail("not a regular file");
  gz_ = gzopen(path_.c_str(), "rb");
  if (gz_ == nullptr) fail(std::string("cannot open (") + std::strerror(errno) + ")");
  gzbuffer(gz_, 1 << 18);
}

int64_t IdxFile::read_some(uint8_t* out, int64_t n) {
  int64_t done = 0;
  while (done < n) {
    const auto chunk = static_cast<unsigned>(std::min<int64_t>(n - done, 1 << 24));
    const int got = gzread(gz_, out + done, chunk);
    if (got < 0) {
      int code = 0;
      std::string msg = gzerror(gz_, &code);
      if (msg.rfind(path_ + ": ", 0) == 0) msg.erase(0, path_.size() + 2);  // zlib adds the path
      fail("corrupt gzip data (" + msg + ")");
    }
    if (got == 0) break;
    done += got;
  }
  return done;
}

void IdxFile::read_exactly(uint8_t* out, int64_t n, const std::string& what) {
  const int64_t got = read_some(out, n);
  if (got < n) {
    fail("truncated: expected " + std::to_string(n) + " bytes of " + what + ", found only " +
         std::to_string(got));
  }
}

uint32_t IdxFile::read_u32(const char* field) {
  uint8_t b[4];
  read_exactly(b, 4, std::string("header field '") + field + "'");
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
}

void IdxFile::expect_end() {
  uint8_t extra[4096];
  int64_t trailing = 0;
  for (int64_t got; (got = read_some(extra, sizeof extra)) > 0;) trailing += got;
  if (trailing > 0) {
    fail("corrupt: " + std::to_string(trailing) +
         " bytes follow the data its header announces (expected none)");
  }
}

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

void expect_field(IdxFile& f, const char* field, uint32_t expected, bool as_hex = false) {
  const uint32_t found = f.read_u32(field);
  if (found != expected) {
    f.fail(std::string("header field '") + field + "' is " +
           (as_hex ? hex(found) : std::to_string(found)) + ", expected " +
           (as_hex ? hex(expected) : std::to_string(expected)));
  }
}

at::Tensor read_images(const std::string& path) {
  IdxFile f(path);
  expect_field(f, "magic", kImagesMagic, true);
  const uint32_t count = f.read_u32("image count");
  if (count == 0) f.fail("header says it holds 0 images, expected at least 1");
  expect_field(f, "rows", kSide);
  expect_field(f, "columns", kSide);
  at::Tensor images = at::empty({count, kSide, kSide}, at::kByte);
  f.read_exactly(images.data_ptr<uint8_t>(), images.numel(),
                 "pixels (" + std::to_string(count) + " images x 28 x 28)");
  f.expect_end();
  return images;
}

at::Tensor read_labels(const std::string& path, int64_t expected_count) {
  IdxFile f(path);
  expect_field(f, "magic", kLabelsMagic, true);
  expect_field(f, "label count (must match the images file)",
               static_cast<uint32_t>(expected_count));
  std::vector<uint8_t> raw(static_cast<size_t>(expected_count));
  f.read_exactly(raw.data(), expected_count, "labels");
  f.expect_end();
  at::Tensor labels = at::empty({expected_count}, at::kLong);
  int64_t* out = labels.data_ptr<int64_t>();
  for (int64_t i = 0; i < expected_count; ++i) {
    if (raw[i] > 9) {
      f.fail("corrupt: label " + std::to_string(i) + " is " + std::to_string(raw[i]) +
             ", expected a class in 0..9");
    }
    out[i] = raw[i];
  }
  return labels;
}

}  // namespace

FmnistSplit load_fmnist(const std::string& dir, const std::string& split) {
  const std::string prefix = dir + "/" + split;
  FmnistSplit out;
  out.images = read_images(prefix + "-images-idx3-ubyte.gz");
  out.labels = read_labels(prefix + "-labels-idx1-ubyte.gz", out.images.size(0));
  return out;
}

}  // namespace bench
