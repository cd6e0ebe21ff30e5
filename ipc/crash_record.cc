#include "ipc/crash_record.h"

#include "ipc/unique_fd.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace mploader::ipc {
namespace {

// Signal context helpers: no allocation, no locale, no stdio.
uint64_t parse_hex(const char*& p, const char* end) {
  uint64_t v = 0;
  for (; p < end; ++p) {
    const char c = *p;
    const int digit = c >= '0' && c <= '9'   ? c - '0'
                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                             : -1;
    if (digit < 0) break;
    v = v * 16 + static_cast<uint64_t>(digit);
  }
  return v;
}

bool line_holds(const char* line, size_t length, uint64_t address) {
  const char* p = line;
  const char* end = line + length;
  const uint64_t start = parse_hex(p, end);
  if (p >= end || *p != '-') return false;
  ++p;
  const uint64_t stop = parse_hex(p, end);
  return address >= start && address < stop;
}

}  // namespace

const char* phase_name(uint32_t phase) {
  switch (static_cast<WorkerPhase>(phase)) {
    case WorkerPhase::kStarting: return "starting";
    case WorkerPhase::kIdle: return "idle";
    case WorkerPhase::kDatasetGet: return "Dataset::get";
    case WorkerPhase::kCollate: return "collate";
    case WorkerPhase::kPublish: return "publishing a batch";
    case WorkerPhase::kDatasetWrite: return "Dataset::write";
    case WorkerPhase::kDatasetWriteBatch: return "Dataset::write_batch";
  }
  return "unknown";
}

std::optional<CrashSnapshot> snapshot(const CrashRecord& r) {
  if (r.state.load(std::memory_order_acquire) != CrashRecord::kComplete) return std::nullopt;
  CrashSnapshot s;
  s.signal = r.signal;
  s.si_code = r.si_code;
  s.tid = r.tid;
  s.fault_address = r.fault_address;
  s.sample_index = r.sample_index;
  s.sequence = r.sequence;
  s.phase = r.phase;
  s.pc = r.pc;
  const uint32_t n = r.num_frames < kMaxFrames ? r.num_frames : kMaxFrames;
  s.frames.assign(r.frames, r.frames + n);
  size_t len = 0;
  while (len < sizeof r.mapping && r.mapping[len] != '\0') ++len;
  s.mapping.assign(r.mapping, len);
  s.mapping_fs_free = r.mapping_fs_free;
  s.mapping_fs_type = r.mapping_fs_type;
  s.mapping_file_size = r.mapping_file_size;
  return s;
}

namespace {

// Signal context. Calls `on_line(line, length)` for each line of /proc/self/maps (without its
// newline), reading in chunks and carrying a partial line between them; stops when it returns
// false. A line longer than the buffer is passed truncated, with `complete` false. open, read,
// and UniqueFd's close only: all async-signal-safe.
template <typename OnLine>
void for_each_maps_line(OnLine on_line) {
  const UniqueFd fd(open("/proc/self/maps", O_RDONLY | O_CLOEXEC));
  if (!fd) return;
  char chunk[2048];
  char line[512];
  size_t line_len = 0;
  bool complete = true;
  ssize_t n;
  while ((n = read(fd.get(), chunk, sizeof chunk)) > 0) {
    for (ssize_t i = 0; i < n; ++i) {
      if (chunk[i] != '\n') {
        if (line_len + 1 < sizeof line) {
          line[line_len++] = chunk[i];
        } else {
          complete = false;
        }
        continue;
      }
      if (!on_line(line, line_len, complete)) return;
      line_len = 0;
      complete = true;
    }
  }
}

// Signal context: whether a maps line maps an ELF file the symbolizer can open: a path that
// still exists. Anonymous memory, [heap]/[stack], memfds (rings, overflow segments) and deleted
// files name no code, and a process can have thousands of them (a sanitizer's shadow, kept
// batches), which would crowd the libraries out of the copy.
bool maps_a_file(const char* line, size_t len) {
  size_t at = 0;
  while (at < len && line[at] != '/') ++at;
  if (at == len) return false;
  static constexpr char kDeleted[] = " (deleted)";
  constexpr size_t kDeletedLen = sizeof kDeleted - 1;
  if (len - at >= kDeletedLen) {
    bool deleted = true;
    for (size_t k = 0; k < kDeletedLen && deleted; ++k) {
      deleted = line[len - kDeletedLen + k] == kDeleted[k];
    }
    if (deleted) return false;
  }
  return true;
}

}  // namespace

// Signal context.
void find_mapping_line(uint64_t address, char* out, size_t size) {
  out[0] = '\0';
  for_each_maps_line([&](const char* line, size_t len, bool) {
    if (!line_holds(line, len, address)) return true;
    size_t k = 0;
    for (; k < len && k + 1 < size; ++k) out[k] = line[k];
    out[k] = '\0';
    return false;
  });
}

// Signal context: only the lines of mapped files, each whole, while they fit.
size_t copy_own_maps(char* out, size_t size) {
  size_t done = 0;
  for_each_maps_line([&](const char* line, size_t len, bool complete) {
    if (!complete || !maps_a_file(line, len)) return true;
    if (done + len + 1 > size) return false;
    for (size_t k = 0; k < len; ++k) out[done + k] = line[k];
    out[done + len] = '\n';
    done += len + 1;
    return true;
  });
  return done;
}

// Signal context. The path starts at the first '/' of the line; its directory is statfs'ed.
void mapping_filesystem(const char* line, int64_t* free_bytes, int64_t* fs_type) {
  *free_bytes = -1;
  *fs_type = 0;
  const char* path = line;
  while (*path != '\0' && *path != '/') ++path;
  char dir[200];
  size_t last_slash = 0;
  size_t n = 0;
  for (; path[n] != '\0' && n + 1 < sizeof dir; ++n) {
    dir[n] = path[n];
    if (path[n] == '/') last_slash = n;
  }
  if (n == 0 || last_slash == 0) return;
  dir[last_slash] = '\0';
  struct statfs st;
  if (syscall(SYS_statfs, dir, &st) != 0) return;
  *free_bytes = static_cast<int64_t>(st.f_bavail) * static_cast<int64_t>(st.f_bsize);
  *fs_type = static_cast<int64_t>(st.f_type);
}

// Signal context. A maps line: "start-end perms offset dev inode path"; the inode is the fifth
// field, the path starts at the first '/'.
int64_t mapped_file_size(const char* line) {
  const char* p = line;
  for (int field = 0; field < 4; ++field) {
    while (*p != '\0' && *p != ' ') ++p;
    while (*p == ' ') ++p;
  }
  uint64_t inode = 0;
  for (; *p >= '0' && *p <= '9'; ++p) inode = inode * 10 + static_cast<uint64_t>(*p - '0');
  while (*p != '\0' && *p != '/') ++p;
  if (*p == '\0' || inode == 0) return -1;
  struct stat st;
  if (stat(p, &st) != 0 || static_cast<uint64_t>(st.st_ino) != inode) return -1;
  return static_cast<int64_t>(st.st_size);
}

}  // namespace mploader::ipc
