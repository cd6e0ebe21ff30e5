#include "loader/overflow_memory.h"

#include "loader/messages.h"

#include <mploader/errors.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace mploader::detail {
namespace {

std::atomic<uint64_t> g_live_segments{0};
std::atomic<uint64_t> g_live_bytes{0};

// Tensors are 64-byte aligned inside a segment; private copies keep that alignment.
constexpr size_t kCopyAlign = 64;

// A mapped segment, counted while it lives.
class MappedSegment {
 public:
  MappedSegment(void* base, uint64_t bytes) : base_(base), bytes_(bytes) {
    g_live_segments.fetch_add(1, std::memory_order_relaxed);
    g_live_bytes.fetch_add(bytes, std::memory_order_relaxed);
  }
  MappedSegment(const MappedSegment&) = delete;
  MappedSegment& operator=(const MappedSegment&) = delete;
  ~MappedSegment() {
    munmap(base_, bytes_);
    g_live_segments.fetch_sub(1, std::memory_order_relaxed);
    g_live_bytes.fetch_sub(bytes_, std::memory_order_relaxed);
  }
  uint8_t* base() const { return static_cast<uint8_t*>(base_); }

 private:
  void* base_;
  uint64_t bytes_;
};

// Reads the whole segment with pread: no mapping at all, not even for a moment, so this works
// when the process is already at its mapping limit. Empty `why` on success.
std::shared_ptr<uint8_t> copy_segment(int fd, uint64_t bytes, std::string& why) {
  const size_t rounded = (bytes + kCopyAlign - 1) / kCopyAlign * kCopyAlign;
  std::shared_ptr<uint8_t> copy(static_cast<uint8_t*>(std::aligned_alloc(kCopyAlign, rounded)),
                                [](uint8_t* p) { std::free(p); });
  if (!copy) {
    why = "allocating " + std::to_string(bytes) + " bytes of private memory failed";
    return nullptr;
  }
  uint64_t done = 0;
  while (done < bytes) {
    const ssize_t n = pread(fd, copy.get() + done, bytes - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      why = n < 0 ? std::string("pread: ") + std::strerror(errno)
                  : "the segment ends after " + std::to_string(done) + " of " +
                        std::to_string(bytes) + " bytes";
      return nullptr;
    }
    done += static_cast<uint64_t>(n);
  }
  return copy;
}

}  // namespace

uint64_t live_overflow_segments() { return g_live_segments.load(std::memory_order_relaxed); }
uint64_t live_overflow_bytes() { return g_live_bytes.load(std::memory_order_relaxed); }

// Read with a stack buffer: near the limit even a small heap allocation may fail.
int64_t mappings_now() {
  const ipc::UniqueFd fd(open("/proc/self/maps", O_RDONLY | O_CLOEXEC));
  if (!fd) return -1;
  char buf[16384];
  int64_t lines = 0;
  ssize_t n;
  while ((n = read(fd.get(), buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
    lines += std::count(buf, buf + std::max<ssize_t>(n, 0), '\n');
  }
  return lines;
}

uint64_t max_map_count() {
  static const uint64_t limit = [] {
    std::ifstream in("/proc/sys/vm/max_map_count");
    uint64_t value = 0;
    return (in >> value) && value > 0 ? value : uint64_t{65530};
  }();
  return limit;
}

uint64_t overflow_copy_threshold() { return std::min<uint64_t>(1024, max_map_count() / 16); }

namespace {

// The program's own mappings count against the same limit. Checked every kRecheckEvery
// segments, since reading /proc/self/maps takes longer the more mappings there are: mapping
// stops while fewer than kSpareMappings are left, which malloc, threads and libraries need.
constexpr uint64_t kRecheckEvery = 64;
constexpr int64_t kSpareMappings = 512;
std::atomic<uint64_t> g_received{0};
std::atomic<bool> g_near_limit{false};

bool may_map() {
  if (g_received.fetch_add(1, std::memory_order_relaxed) % kRecheckEvery == 0) {
    const int64_t now = mappings_now();
    g_near_limit.store(now >= 0 && now + kSpareMappings > static_cast<int64_t>(max_map_count()),
                       std::memory_order_relaxed);
  }
  return live_overflow_segments() < overflow_copy_threshold() &&
         !g_near_limit.load(std::memory_order_relaxed);
}

}  // namespace

OverflowMemory take_overflow_segment(ipc::UniqueFd fd, uint64_t bytes, int worker) {
  OverflowMemory memory;
  int map_errno = 0;
  if (may_map()) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
    if (p != MAP_FAILED) {
      fd.reset();  // the mapping keeps the memory; an fd per kept batch would hit ulimit -n
      auto segment = std::make_shared<MappedSegment>(p, bytes);
      memory.base = segment->base();
      memory.owner = std::move(segment);
      return memory;
    }
    map_errno = errno;
  }
  // Past the threshold, near the limit, or mmap failed (ENOMEM: the limit reached after all):
  // a private copy needs no mapping.
  std::string why;
  std::shared_ptr<uint8_t> copy = copy_segment(fd.get(), bytes, why);
  fd.reset();
  if (!copy) {
    if (map_errno != 0) why = std::string("mmap: ") + std::strerror(map_errno) + "; " + why;
    throw Error(messages::overflow_map_failed(worker, bytes, why, live_overflow_segments(),
                                              live_overflow_bytes(), mappings_now(),
                                              max_map_count()));
  }
  memory.base = copy.get();
  memory.owner = std::move(copy);
  memory.copied = true;
  return memory;
}

}  // namespace mploader::detail
