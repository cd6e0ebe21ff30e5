#include "vision/image_file.h"

#include "vision/decoders.h"

#include <mploader/errors.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace mploader::vision::detail {
namespace {

// Errors here say what happened to the file, not its name: ImageFolder's message around them
// names it.

// Enough for any PNG's IHDR and for a JPEG's SOF behind ordinary metadata; a header further in
// (a large ICC profile, say) is read with the rest of the file.
constexpr size_t kHeaderBytes = size_t{64} << 10;

struct FileCloser {
  int fd;
  ~FileCloser() { close(fd); }
};

std::string system_error(const char* call) { return std::string(call) + ": " + std::strerror(errno); }

const char* kind_of(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "something";
}

// Bytes [offset, offset + count) of the file into `out`.
void read_at(int fd, uint8_t* out, size_t count, size_t offset, size_t file_size) {
  size_t done = 0;
  while (done < count) {
    const ssize_t n = pread(fd, out + done, count - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(system_error("read"));
    if (n == 0) {
      throw Error("the file shrank while it was read (" + std::to_string(offset + done) + " of " +
                  std::to_string(file_size) + " bytes)");
    }
    done += static_cast<size_t>(n);
  }
}

void check_file_bytes(size_t size, int64_t max_bytes, const ImageInfo* info) {
  if (static_cast<uint64_t>(size) <= static_cast<uint64_t>(max_bytes)) return;
  const std::string what =
      info ? "a " + std::to_string(info->width) + " x " + std::to_string(info->height) +
                 (info->format == ImageFormat::kJpeg ? " JPEG" : " PNG") + " in "
           : "";
  throw Error("the file is " + what + std::to_string(size) + " bytes, more than the limit of " +
              std::to_string(max_bytes) + " (ImageFolderOptions::max_file_bytes): it was "
              "refused before it was read; raise the limit if such files are expected");
}

}  // namespace

ImageInfo read_image_file(const std::string& path, const FileLimits& limits,
                          ImageDecoder& decoder, std::vector<uint8_t>& bytes) {
  // O_NONBLOCK: a FIFO put in an image's place would block open() until a writer came.
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    throw Error(system_error("open") + (errno == ENOENT ? limits.missing_hint : ""));
  }
  const FileCloser closer{fd};
  struct stat st;
  if (fstat(fd, &st) != 0) throw Error(system_error("fstat"));
  if (!S_ISREG(st.st_mode)) {
    throw Error(std::string("it is ") + kind_of(st.st_mode) +
                ", not a regular file; put an image file there or remove it");
  }
  const auto size = static_cast<size_t>(st.st_size);
  if (size == 0) throw DecodeError("the file is empty (0 bytes)");
  const size_t head = std::min(size, kHeaderBytes);
  bytes.resize(head);
  read_at(fd, bytes.data(), head, 0, size);
  ImageInfo info;
  bool header_read = false;
  try {
    info = decoder.info(bytes.data(), head);
    header_read = true;
  } catch (const DecodeError&) {
    // Not an image at all, or a header within the bytes read: the file is refused. An image
    // whose header runs past them is read on, within the byte limit.
    if (head == size || !image_signature(bytes.data(), head)) throw;
  }
  check_file_bytes(size, limits.max_bytes, header_read ? &info : nullptr);
  if (head < size) {
    bytes.resize(size);
    read_at(fd, bytes.data() + head, size - head, head, size);
  }
  return header_read ? info : decoder.info(bytes.data(), bytes.size());
}

}  // namespace mploader::vision::detail
