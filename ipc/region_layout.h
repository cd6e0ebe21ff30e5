// ipc/: shared memory, rings, eventfds and descriptors between the main process and workers.
//
// The layout of one worker's shared-memory region, shared by the main process and the worker:
//
//   RegionHeader (with the free-slot stack) | task ring (main -> worker)
//   | done ring (worker -> main)
//   | TaskDescriptor + indices, x num_descriptors | payload slots, x num_slots (page-aligned)
//
// The main process picks a free descriptor, promises the task a payload slot (it counts the free
// slots; it does not pick one), writes the sample indices into the descriptor and pushes its id
// on the task ring. The worker loads the samples and, once the batch's size is known, pops the
// most recently freed slot from the header's free-slot stack (ipc/slot_stack.h) and writes its
// number into the descriptor (or writes into a one-off overflow segment when the task has no
// promise or the batch is too big). It fills the descriptor's status and tensor table and
// pushes the id on the done ring. Descriptors come back as soon as the main process has read
// them; payload slots are pushed back on the stack when the last tensor viewing them is
// destroyed, so the next batch goes into the slot the training loop released last.
//
// Everything here is standard-layout and offset-based: it means the same in every process.
#pragma once

#include "ipc/crash_record.h"
#include "ipc/slot_stack.h"
#include "ipc/spsc_ring.h"

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace mploader::ipc {

constexpr uint64_t kRegionMagic = 0x3152444c4f4c504dULL;  // "MPLOLDR1" little-endian
// 4: the free-slot stack; 5: failed_call; 6: skip log; 7: TensorMeta::kind (text fields);
// 8: stage times and CPU time
constexpr uint32_t kLayoutVersion = 9;
constexpr uint32_t kRingCapacity = 64;
// Each ring can hold every descriptor id at once, so a push of one can never find it full.
constexpr uint32_t kMaxDescriptors = kRingCapacity;
// num_slots is prefetch_factor + 1 and prefetch_factor < kMaxDescriptors: the stack holds them.
static_assert(kMaxSlots >= kMaxDescriptors);
// The tensor table's limits (docs/batches.md, "Limits of a batch"). Each is checked against
// sample 0's batch at Loader construction. A descriptor's table costs kMaxTensors * ~280
// bytes, per descriptor.
constexpr uint32_t kMaxTensors = 64;
constexpr uint32_t kMaxDims = 16;   // batch dimension included
constexpr uint32_t kNameBytes = 128;  // 127 characters and the terminator
constexpr uint32_t kShutdownId = 0xffffffffu;  // pushed on the task ring: exit now
// Shards a batch's stream reads from then on, sent with it so the worker can fetch them early.
constexpr uint32_t kMaxUpcomingShards = 4;
constexpr size_t kPayloadAlign = 64;
constexpr size_t kPageBytes = 4096;
constexpr size_t kMapsBytes = 256 * 1024;

using TaskRing = SpscIndexRing<kRingCapacity>;

// What a tensor-table entry holds. A text field (Sample::set_text) is two entries of one name,
// offsets then bytes: int64 [B+1] offsets into uint8 [total] bytes, row i = [off[i], off[i+1]).
enum class FieldKind : uint32_t {
  kTensor = 0,
  kTextOffsets = 1,
  kTextBytes = 2,
};

struct TensorMeta {
  char name[kNameBytes];
  int32_t dtype;  // c10::ScalarType; both sides run the same binary
  int32_t ndim;
  uint32_t kind;  // FieldKind
  uint32_t reserved_kind;
  int64_t shape[kMaxDims];
  uint64_t offset;  // from the start of the payload slot or overflow segment
  uint64_t nbytes;
};

// Where a worker's busy time goes (LoaderStats' StageTimes), indexing RegionHeader::stage_ns.
enum class Stage : uint32_t {
  kRead = 0,       // Dataset::get / write / write_batch, less what the dataset names below
  kDecode = 1,     // decoding, as the dataset reports it (mploader/stage_timer.h)
  kTransform = 2,  // transforms, likewise
  kWrite = 3,      // planning the batch and collating it into its slot
  kHandOff = 4,    // publishing the batch and waking the main process
  kCount = 5,
};

// What a task asks of the worker.
enum class TaskKind : uint32_t {
  kBatch = 0,  // load and collate the indices into the slot (or an overflow segment)
  kProbe = 1,  // size a batch of probe_batch_size from the indices; write no payload
};

enum class TaskStatus : uint32_t {
  kPending = 0,
  kOk = 1,
  kDatasetError = 2,   // the dataset threw (failed_call says where); failed_index: the sample
  kCollateError = 3,   // the collator threw
  kTooLarge = 4,       // did not fit the slot and overflow is off; batch_bytes says how big
  kCancelled = 5,      // the epoch was abandoned before the task ran
  kInternalError = 6,  // a syscall failed in the worker; error_message says which
};

struct TaskDescriptor {
  uint64_t sequence;    // position of the batch in its epoch
  uint64_t epoch;
  uint64_t generation;  // the main process's epoch run; stale runs are cancelled
  // Main -> worker: kSlotAtStart (pop a free slot if the batch fits) or kNoSlot (overflow).
  // Worker -> main: the slot it popped and wrote into, or kNoSlot (none popped).
  int32_t payload_slot;
  uint32_t num_indices;
  uint32_t status;      // TaskStatus
  uint32_t num_tensors;
  uint32_t kind;        // TaskKind
  uint32_t probe_batch_size;  // kProbe: the batch size to estimate for
  uint64_t batch_bytes; // payload bytes the batch needed (kProbe: the estimate)
  int64_t failed_index;
  uint32_t failed_call;  // detail::DatasetCall: which Dataset function failed (kDatasetError)
  // Main -> worker, kBatch of a StreamingDataset: the shards (indices into its shards()) the
  // batch's stream reads from the one it reaches with this batch on, in order; 0 of them for
  // anything else.
  uint32_t num_upcoming_shards;
  int64_t upcoming_shards[kMaxUpcomingShards];
  char error_type[128];
  char error_message[1024];
  TensorMeta tensors[kMaxTensors];
  // Followed by int64_t indices[max_indices] (see RegionGeometry::descriptor_stride).
};

// A sample the dataset replaced with another (mploader::report_skipped_sample), on its way from
// the worker to the main process.
struct SkipRecord {
  int64_t index;
  int64_t substitute;
  uint64_t epoch;
  char source[512];
  char reason[512];
};
// Records a worker can report before the main process drains them (it does so after every batch
// it receives); more are counted in skips_total but not listed.
constexpr uint32_t kSkipLogCapacity = 32;

struct alignas(64) RegionHeader {
  uint64_t magic;
  uint32_t version;
  int32_t worker_id;
  uint64_t region_bytes;
  uint32_t num_descriptors;
  uint32_t num_slots;
  uint32_t max_indices;
  uint32_t reserved;
  uint64_t slot_bytes;
  uint64_t descriptor_stride;
  uint64_t descriptors_offset;
  uint64_t slots_offset;
  alignas(64) std::atomic<uint32_t> stop;           // main: exit at the next sample
  std::atomic<uint64_t> cancel_generation;          // main: drop tasks of older generations
  std::atomic<uint64_t> tasks_done;                 // worker: progress counter
  std::atomic<int64_t> current_index;               // worker: sample being loaded, -1 idle
  std::atomic<uint64_t> current_sequence;           // worker: batch being built
  std::atomic<uint32_t> phase;                      // worker: WorkerPhase
  std::atomic<uint64_t> busy_ns;                    // worker: time spent on tasks
  std::atomic<uint64_t> stage_ns[static_cast<uint32_t>(Stage::kCount)];  // worker: busy_ns split
  std::atomic<uint64_t> cpu_ns;  // worker: its CPU time since its first task (sampled)
  // Main pushes the slots the training loop releases; the worker pops one per batch it writes.
  SharedSlotStack free_slots;
  // Written by the worker's signal handlers (worker/crash_handler.h), read by the main process.
  alignas(64) CrashRecord crash;
  alignas(64) CrashRecord stack_dump;
  char init_error[512];  // worker: what worker_init threw ("" if nothing)
  // forkserver: the wait status of a worker it reaped, -1 until then (such a worker is not the
  // main process's child, so waitid cannot tell the main process).
  std::atomic<int64_t> foreign_wait_status;
  // Written by the crash and stack-dump handlers: the worker's /proc/self/maps at that moment,
  // to symbolize its frames in its own layout (a spawned worker's differs from ours).
  uint64_t maps_bytes;
  char maps_text[kMapsBytes];
  // Skipped samples, worker to main, single producer and single consumer. The worker fills
  // skip_log[written % capacity] and then publishes written (release); the main process reads
  // the records below written (acquire), then publishes read (release), which frees them for
  // the worker (acquire). Both counters only grow.
  alignas(64) std::atomic<uint64_t> skips_total;    // worker: every skip, listed or not
  std::atomic<uint64_t> skips_written;              // worker: records filled
  alignas(64) std::atomic<uint64_t> skips_read;     // main: records taken
  std::atomic<uint64_t> skips_counted;  // main: the part of skips_total in the Loader's count
  SkipRecord skip_log[kSkipLogCapacity];
};

struct RegionGeometry {
  uint32_t num_descriptors = 0;
  uint32_t num_slots = 0;
  uint32_t max_indices = 0;
  uint64_t slot_bytes = 0;
  uint64_t descriptor_stride = 0;
  uint64_t task_ring_offset = 0;
  uint64_t done_ring_offset = 0;
  uint64_t descriptors_offset = 0;
  uint64_t slots_offset = 0;
  uint64_t total_bytes = 0;

  static RegionGeometry compute(uint32_t num_descriptors, uint32_t num_slots,
                                uint32_t max_indices, uint64_t slot_bytes);
};

// A typed view over a mapped region. Owns nothing.
class RegionView {
 public:
  RegionView() = default;
  explicit RegionView(void* base) : base_(static_cast<uint8_t*>(base)) {}

  // Writes the header and empty rings into fresh memory. Only before any worker starts.
  static void initialize(void* base, const RegionGeometry& geometry, int worker_id);

  RegionHeader& header() const { return *reinterpret_cast<RegionHeader*>(base_); }
  TaskRing& task_ring() const;
  TaskRing& done_ring() const;
  TaskDescriptor& descriptor(uint32_t id) const;
  int64_t* indices(uint32_t id) const;
  uint8_t* slot(uint32_t index) const;
  bool valid_descriptor_id(uint32_t id) const { return id < header().num_descriptors; }

 private:
  uint8_t* base_ = nullptr;
};

inline uint64_t align_up(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

// Copies at most size-1 bytes and terminates. Async-signal-safe.
void copy_text(char* dst, size_t size, const char* src);

}  // namespace mploader::ipc
