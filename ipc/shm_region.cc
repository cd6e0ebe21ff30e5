#include "ipc/shm_region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

namespace mploader::ipc {
namespace {

Result<UniqueFd> open_backing_file(const std::string& dir, const std::string& label) {
  if (dir.empty()) {
    int fd = memfd_create(label.c_str(), MFD_CLOEXEC);
    if (fd < 0) return last_error("memfd_create", label);
    return UniqueFd(fd);
  }
  // O_TMPFILE: a file with no name at all, so a crash cannot leak it.
  int fd = open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return UniqueFd(fd);
  if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) {
    return last_error("open(O_TMPFILE)", dir);
  }
  // Filesystems without O_TMPFILE: create, then unlink before anything else can happen.
  std::string path = dir + "/mploader-XXXXXX";
  std::vector<char> buf(path.begin(), path.end());
  buf.push_back('\0');
  fd = mkostemp(buf.data(), O_CLOEXEC);
  if (fd < 0) return last_error("mkostemp", dir);
  unlink(buf.data());
  return UniqueFd(fd);
}

// Zero-fills with write(2): for filesystems that cannot fallocate, write reports ENOSPC where
// touching mapped pages would raise SIGBUS.
Status reserve_by_writing(int fd, size_t bytes) {
  std::vector<char> zeros(1 << 20, 0);
  size_t done = 0;
  while (done < bytes) {
    size_t n = std::min(zeros.size(), bytes - done);
    ssize_t w = pwrite(fd, zeros.data(), n, static_cast<off_t>(done));
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return last_error("pwrite", "reserving shared memory");
    done += static_cast<size_t>(w);
  }
  return Ok{};
}

Status reserve(int fd, size_t bytes) {
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) return last_error("ftruncate");
  int rc;
  do {
    rc = posix_fallocate(fd, 0, static_cast<off_t>(bytes));  // returns the error, not errno
  } while (rc == EINTR);
  if (rc == 0) return Ok{};
  if (rc == EOPNOTSUPP || rc == EINVAL) return reserve_by_writing(fd, bytes);
  return SysError{"posix_fallocate", rc, {}};
}

}  // namespace

Result<ShmRegion> ShmRegion::create(size_t bytes, const std::string& dir,
                                    const std::string& label) {
  auto fd = open_backing_file(dir, label);
  if (!fd.ok()) return fd.error();
  ShmRegion region;
  region.fd_ = fd.take();
  Status reserved = reserve(region.fd(), bytes);
  if (!reserved.ok()) return reserved.error();
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, region.fd(), 0);
  if (p == MAP_FAILED) return last_error("mmap", label);
  region.base_ = p;
  region.size_ = bytes;
  return region;
}

Result<ShmRegion> ShmRegion::adopt(UniqueFd fd, size_t bytes) {
  ShmRegion region;
  region.fd_ = std::move(fd);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, region.fd(), 0);
  if (p == MAP_FAILED) return last_error("mmap", "received segment");
  region.base_ = p;
  region.size_ = bytes;
  return region;
}

ShmRegion& ShmRegion::operator=(ShmRegion&& other) noexcept {
  if (this != &other) {
    reset();
    base_ = other.base_;
    size_ = other.size_;
    fd_ = std::move(other.fd_);
    other.base_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

Status ShmRegion::map_pages(size_t offset, size_t bytes) const {
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  // Linux 5.14; older headers lack the name
#endif
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t begin = offset / page * page;  // madvise wants a page-aligned start
  const size_t end = std::min(size_, offset + bytes);
  if (base_ == nullptr || begin >= end) return Ok{};
  auto* at = static_cast<unsigned char*>(base_) + begin;
  if (madvise(at, end - begin, MADV_POPULATE_READ) == 0) return Ok{};
  if (errno != EINVAL) return last_error("madvise(MADV_POPULATE_READ)");
  // An older kernel: one read per page faults each in.
  const auto* pages = static_cast<const volatile unsigned char*>(at);
  for (size_t k = 0; k < end - begin; k += page) (void)pages[k];
  return Ok{};
}

void ShmRegion::reset() {
  if (base_ != nullptr) munmap(base_, size_);
  base_ = nullptr;
  size_ = 0;
  close_fd();
}

void ShmRegion::close_fd() { fd_.reset(); }

int64_t free_bytes_of_dir(const std::string& dir) {
  struct statvfs st;
  if (statvfs(dir.c_str(), &st) != 0) return -1;
  return static_cast<int64_t>(st.f_bavail) * static_cast<int64_t>(st.f_frsize);
}

}  // namespace mploader::ipc
