// Fuzzes token files (datasets/token_stream.cc): any bytes as a token file, through a memfd's
// /proc/self/fd path, with TokenStreamOptions taken from the input's first 4 bytes (id width,
// window order, context 1..16, vocab_size, windows per shard). An accepted file's every window
// (up to 64) must lie inside the file, and reading it must give its ids or refuse one outside
// the vocabulary. Refusing is fine (OptionError from the constructor, mploader::Error for an
// id); a crash, UB, another exception or a window outside the file is not.
#include <mploader/errors.h>
#include <mploader/token_stream.h>

#include <ATen/core/Tensor.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace {

mploader::TokenStreamOptions options_from(const uint8_t* head) {
  mploader::TokenStreamOptions o;
  o.type = (head[0] & 1) != 0 ? mploader::TokenType::kUInt32 : mploader::TokenType::kUInt16;
  o.windows = (head[0] & 2) != 0 ? mploader::TokenWindows::kRandom
                                 : mploader::TokenWindows::kSequential;
  o.context = 1 + head[1] % 16;
  o.vocab_size = head[2] < 128 ? 0 : head[2];
  o.windows_per_shard = head[3] % 8;
  return o;
}

void check_windows(mploader::TokenStream& stream) {
  const int64_t tokens = stream.file_tokens().front();
  const int64_t context = stream.options().context;
  const int64_t samples = std::min<int64_t>(static_cast<int64_t>(stream.size()), 64);
  for (int64_t i = 0; i < samples; ++i) {
    const int64_t start = stream.window_start(i, 7, 3);
    if (start < 0 || start + context + 1 > tokens) {
      std::fprintf(stderr, "window %lld starts at %lld: outside the file's %lld tokens\n",
                   static_cast<long long>(i), static_cast<long long>(start),
                   static_cast<long long>(tokens));
      std::abort();
    }
    try {
      stream.get(i);
    } catch (const mploader::Error&) {  // an id outside the vocabulary
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  const int fd = memfd_create("fuzz.tokens", MFD_CLOEXEC);
  if (fd < 0 || write(fd, data + 4, size - 4) != static_cast<ssize_t>(size - 4)) std::abort();
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  try {
    mploader::TokenStream stream({path}, options_from(data));
    check_windows(stream);
  } catch (const mploader::OptionError&) {
  }
  close(fd);
  return 0;
}
