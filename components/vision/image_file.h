// One image file's bytes for ImageFolder, read header first: a file that is no image, or an
// image over the pixel limit, is refused from its first bytes, before the rest is read.
#pragma once

#include <mploader/vision/decode.h>

#include <cstdint>
#include <string>
#include <vector>

namespace mploader::vision::detail {

struct FileLimits {
  int64_t max_bytes;         // ImageFolderOptions::max_file_bytes
  std::string missing_hint;  // why a file the dataset lists may not exist, in parentheses
};

// Reads `path` into `bytes` and returns its header (decoder.info()). Throws DecodeError for the
// decoder's refusals and Error for the file's (missing, not a regular file, over
// limits.max_bytes, unreadable), each naming the call or the numbers but not the file, which
// ImageFolder's message around it names. Never blocks on a FIFO.
ImageInfo read_image_file(const std::string& path, const FileLimits& limits,
                          ImageDecoder& decoder, std::vector<uint8_t>& bytes);

// Frees `buffer` when it holds more than a large image needs, so that one huge file does not
// stay resident in the thread that read it for the rest of the run.
template <typename Buffer>
void release_if_large(Buffer& buffer) {
  constexpr size_t kKeptBytes = size_t{32} << 20;
  if (buffer.capacity() * sizeof(typename Buffer::value_type) > kKeptBytes) Buffer().swap(buffer);
}

}  // namespace mploader::vision::detail
