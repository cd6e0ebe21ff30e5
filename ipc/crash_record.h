// CrashRecord: what a dying worker's signal handler leaves for the main process. It lives in
// the worker's shared region (reserved, so writing it cannot fault for lack of memory), is
// written only with async-signal-safe stores, and is read after the worker is gone.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mploader::ipc {

constexpr uint32_t kMaxFrames = 48;

// What the worker was doing, updated by the worker loop; copied into a record on a crash.
enum class WorkerPhase : uint32_t {
  kStarting = 0,
  kIdle = 1,        // waiting for a task
  kDatasetGet = 2,  // inside Dataset::get
  kCollate = 3,     // inside the collator
  kPublish = 4,     // handing the batch over
  kDatasetWrite = 5,       // inside Dataset::write (in place, into the slot)
  kDatasetWriteBatch = 6,  // inside a dataset's own Dataset::write_batch
};

const char* phase_name(uint32_t phase);

struct CrashRecord {
  enum State : uint32_t { kEmpty = 0, kWriting = 1, kComplete = 2 };
  std::atomic<uint32_t> state;
  int32_t signal;
  int32_t si_code;
  int32_t tid;
  uint64_t fault_address;
  int64_t sample_index;  // -1 when not in Dataset::get
  uint64_t sequence;     // batch being built
  uint32_t phase;        // WorkerPhase
  uint32_t num_frames;
  uint64_t pc;           // the interrupted instruction, from the signal's ucontext
  uint64_t frames[kMaxFrames];  // raw return addresses, symbolized by the main process
  char mapping[200];  // the /proc/self/maps line holding fault_address ("" if none)
  int64_t mapping_fs_free;  // free bytes on the mapping's filesystem at the fault, -1 unknown
  int64_t mapping_fs_type;  // its statfs f_type (TMPFS_MAGIC for tmpfs), 0 unknown
  int64_t mapping_file_size;  // bytes of the mapped file at the fault, -1 unknown (deleted)
};

// The same fields, copied out of shared memory by the main process.
struct CrashSnapshot {
  int32_t signal = 0;
  int32_t si_code = 0;
  int32_t tid = 0;
  uint64_t fault_address = 0;
  int64_t sample_index = -1;
  uint64_t sequence = 0;
  uint32_t phase = 0;
  uint64_t pc = 0;
  std::vector<uint64_t> frames;
  std::string mapping;
  int64_t mapping_fs_free = -1;
  int64_t mapping_fs_type = 0;
  int64_t mapping_file_size = -1;
};

// A complete record's contents, or nullopt while it is empty or half written.
[[nodiscard]] std::optional<CrashSnapshot> snapshot(const CrashRecord& record);

// Signal context: finds the line of /proc/self/maps whose range holds `address` and copies it
// into `out` (terminated; "" when none), with open/read/close only.
void find_mapping_line(uint64_t address, char* out, size_t size);

// Signal context: copies the lines of /proc/self/maps that map files (what symbolizing the frames
// needs: no anonymous memory, memfds or deleted files) into `out`, whole lines while they fit in
// `size` bytes; returns the bytes.
size_t copy_own_maps(char* out, size_t size);

// Signal context: free bytes and type of the filesystem holding the file of a maps line, by a
// raw statfs system call (glibc's statvfs may read /proc/mounts). -1 / 0 when unknown.
void mapping_filesystem(const char* maps_line, int64_t* free_bytes, int64_t* fs_type);

// Signal context: the size of the file a maps line maps, by stat(2) of its path, or -1 when the
// path names no file now or another one (its inode differs from the line's: deleted, replaced,
// a memfd). What tells a file truncated under its mapping from a tmpfs that ran out of pages.
int64_t mapped_file_size(const char* maps_line);

}  // namespace mploader::ipc
