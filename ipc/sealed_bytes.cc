#include "ipc/sealed_bytes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

namespace mploader::ipc {
namespace {

constexpr int kAllSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL;

Status write_all(int fd, std::string_view bytes) {
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = pwrite(fd, bytes.data() + done, bytes.size() - done,
                             static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return last_error("pwrite", "writing a worker's recipe into shared memory");
    done += static_cast<size_t>(n);
  }
  return Ok{};
}

// An empty payload has no pages to map (mmap refuses a length of 0).
Result<const void*> map_read_only(int fd, size_t bytes) {
  if (bytes == 0) return static_cast<const void*>(nullptr);
  void* data = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) return last_error("mmap", "mapping a worker's recipe");
  return static_cast<const void*>(data);
}

// The size of a memfd sealed against every change; EPROTO for one that can still change.
Result<size_t> sealed_size(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return last_error("fstat", "a worker's recipe");
  const int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & kAllSeals) != kAllSeals) {
    return SysError{"fcntl(F_GET_SEALS)", EPROTO,
                    "a worker's recipe: its shared memory is not sealed and can change"};
  }
  return static_cast<size_t>(st.st_size);
}

}  // namespace

Result<std::shared_ptr<const SealedBytes>> SealedBytes::create(std::string_view bytes,
                                                               const char* label) {
  UniqueFd fd(memfd_create(label, MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) return last_error("memfd_create", label);
  Status written = write_all(fd.get(), bytes);
  if (!written.ok()) return written.error();
  if (fcntl(fd.get(), F_ADD_SEALS, kAllSeals) != 0) return last_error("fcntl(F_ADD_SEALS)", label);
  auto data = map_read_only(fd.get(), bytes.size());
  if (!data.ok()) return data.error();
  return std::shared_ptr<const SealedBytes>(new SealedBytes(std::move(fd), data.value(),
                                                            bytes.size()));
}

Result<std::shared_ptr<const SealedBytes>> SealedBytes::adopt(UniqueFd fd) {
  auto size = sealed_size(fd.get());
  if (!size.ok()) return size.error();
  auto data = map_read_only(fd.get(), size.value());
  if (!data.ok()) return data.error();
  return std::shared_ptr<const SealedBytes>(new SealedBytes(std::move(fd), data.value(),
                                                            size.value()));
}

Result<std::shared_ptr<const SealedBytes>> SealedBytes::map(UniqueFd fd, uint64_t bytes) {
  auto size = sealed_size(fd.get());
  if (!size.ok()) return size.error();
  if (size.value() != bytes) {
    return SysError{"fstat", EPROTO, "a worker's recipe of " + std::to_string(bytes) +
                                         " bytes: its descriptor holds " +
                                         std::to_string(size.value())};
  }
  auto data = map_read_only(fd.get(), bytes);
  if (!data.ok()) return data.error();
  return std::shared_ptr<const SealedBytes>(new SealedBytes(UniqueFd(), data.value(), bytes));
}

SealedBytes::~SealedBytes() {
  if (data_ != nullptr) munmap(const_cast<void*>(data_), size_);
}

}  // namespace mploader::ipc
