// LoaderStats: where a Loader's time went, read with Loader::stats(). Counters only grow while
// the Loader lives; take two snapshots and subtract to measure an interval.
//
// Cheap by design: workers add their busy time to their shared region header (relaxed atomics,
// two clock reads per batch) and the Loader's thread times its own waits; reading them takes
// no lock. A snapshot is a plain value, safe to keep and copy.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mploader {

/// One worker's memory over the epoch running (or the last one), from the samples the loader
/// takes of the worker's smaps_rollup in /proc twice a second and at each epoch's start. Byte
/// counts are -1 until a sample exists.
///
/// Private memory (Private_Dirty) is what only this worker holds: what it allocated and the
/// pages it inherited at fork and then wrote to, each a copy (copy-on-write). It is what
/// grows when a dataset caches samples, leaks, or writes to data loaded before the Loader
/// started. Shared memory (Shared_Clean + Shared_Dirty) is held with other processes: pages
/// inherited at fork and not written, mapped files, the loader's rings; it grows harmlessly
/// as mapped files are read.
struct WorkerMemory {
  uint64_t epoch = 0;                 ///< The epoch these numbers cover.
  int64_t private_start_bytes = -1;   ///< At the epoch's (or this process's) first sample.
  int64_t private_bytes = -1;         ///< At the latest sample.
  int64_t private_peak_bytes = -1;    ///< The most seen in the epoch.
  int64_t shared_start_bytes = -1;    ///< At the epoch's (or this process's) first sample.
  int64_t shared_bytes = -1;          ///< At the latest sample.
  uint64_t samples = 0;               ///< Samples taken in the epoch.
  /// Whether the loader warned in this epoch that the worker's private memory keeps growing
  /// (once per worker per epoch; see LoaderStats::memory_growth_warnings).
  bool growth_warned = false;
};

/// Where workers' busy time went, by stage. The stages add up to the busy time.
struct StageTimes {
  /// In the dataset's get(), write() or write_batch(), less what it reported as decoding or
  /// transforms: reading files, and whatever else the dataset does.
  uint64_t read_ns = 0;
  /// Decoding, as the dataset reported it (mploader/stage_timer.h; ImageFolder and TarShards
  /// do).
  uint64_t decode_ns = 0;
  uint64_t transform_ns = 0;  ///< Transforms, as the dataset reported them.
  /// Planning the batch and collating samples into its ring slot (or overflow segment).
  uint64_t write_ns = 0;
  /// Handing the batch to the training process (an overflow segment's descriptor included).
  uint64_t handoff_ns = 0;

  /// The sum of the stages.
  uint64_t total_ns() const {
    return read_ns + decode_ns + transform_ns + write_ns + handoff_ns;
  }
  /// Adds `other`'s stages to these.
  StageTimes& operator+=(const StageTimes& other) {
    read_ns += other.read_ns;
    decode_ns += other.decode_ns;
    transform_ns += other.transform_ns;
    write_ns += other.write_ns;
    handoff_ns += other.handoff_ns;
    return *this;
  }
};

/// One worker's counters (see LoaderStats).
struct WorkerStats {
  /// Time spent building batches (Dataset::get, collation, publishing), from taking a task to
  /// handing it back. Idle time waiting for tasks is not counted.
  uint64_t busy_ns = 0;
  /// The busy time, by stage.
  StageTimes stages;
  /// The worker process's CPU time (all its threads), sampled when it goes idle and at least
  /// every 20 ms of work. Far below busy_ns means the worker waits (on I/O, a lock, a sleep).
  uint64_t cpu_ns = 0;
  uint64_t batches = 0;  ///< Tasks finished, cancelled ones included.
  /// Its private and shared memory over the epoch (WorkerMemory).
  WorkerMemory memory;
};

/// A sample a dataset could not load and replaced with another (report_skipped_sample()).
struct SkippedSample {
  int64_t index = -1;       ///< The sample the batch asked for.
  int64_t substitute = -1;  ///< The sample loaded in its place; -1 when none was.
  uint64_t epoch = 0;       ///< The epoch of the batch.
  std::string source;       ///< Where the dataset read it from (a file's path).
  std::string reason;       ///< Why it could not be loaded (the decoder's message).
};

/// A sample that killed workers and is left out of every batch from then on
/// (LoaderOptions::quarantine_after).
struct QuarantinedSample {
  int64_t index = -1;  ///< The sample's dataset index.
  uint64_t epoch = 0;  ///< The epoch it was quarantined in.
  int64_t deaths = 0;  ///< Worker deaths on it, the one that quarantined it included.
  std::string cause;   ///< The last death's cause, as crash reports name it ("segfault").
  /// The crash report of the death that quarantined it; empty when none was written (or
  /// for a sample quarantined by a loaded state_dict()).
  std::string report_path;
};

/// How many skipped samples LoaderStats::skipped lists; skipped_samples counts them all.
inline constexpr size_t kMaxListedSkips = 1000;

/// What held an epoch back, as EpochStats judges it.
enum class Bottleneck {
  kNone,            ///< Too little measured to judge (no worker process, or no batch).
  kLoop,            ///< The training loop: it waited for data a tenth of the epoch or less.
  kWorkersCompute,  ///< Workers computing (busy, and on a CPU for most of it).
  kWorkersIo,       ///< Workers waiting (busy, but off the CPU for most of it): I/O, locks.
  kHandOff,         ///< Neither: workers had time to spare, yet the loop waited for batches.
};

/// Where one epoch's time went: the loop's wait, and the workers' time summed over them.
/// Counted from the epoch's first batch request to its end (or to now, while it runs); a batch
/// prefetched for the next epoch counts in the epoch it was built in.
struct EpochStats {
  uint64_t epoch = 0;     ///< The epoch.
  bool finished = false;  ///< Whether next() has reached its end (false: running, abandoned).
  int64_t workers_running = 0;  ///< Worker processes running at its end.
  uint64_t batches = 0;     ///< Batches next() returned in it.
  uint64_t wall_ns = 0;     ///< Its duration.
  uint64_t wait_ns = 0;     ///< Of which the loop waited inside next().
  /// Of which, waiting in order for a batch while later ones were done (head-of-line).
  uint64_t head_of_line_ns = 0;
  uint64_t busy_ns = 0;     ///< Workers' busy time, summed over them.
  uint64_t cpu_ns = 0;      ///< Workers' CPU time, summed over them.
  StageTimes stages;        ///< Workers' busy time by stage, summed over them.
  int64_t cpu_budget = 0;   ///< CPUs this process may use (affinity mask and cgroup quota).
  Bottleneck bottleneck = Bottleneck::kNone;  ///< What held it back.
  /// One line: where the time went, what held the epoch back and what would help. The Loader
  /// logs it at the end of each epoch (info level; debug for epochs under a second).
  std::string summary;
};

/// How many epochs LoaderStats::epochs keeps (the latest).
inline constexpr size_t kMaxListedEpochs = 1000;

/// One change the autotuner made (LoaderOptions::num_workers or prefetch_factor = kAuto), with
/// the numbers of the window of batches it judged.
struct AutotuneChange {
  uint64_t epoch = 0;         ///< The epoch it was made in.
  uint64_t batch = 0;         ///< LoaderStats::batches when it was made.
  int64_t workers_before = 0;  ///< Worker processes running before it.
  int64_t workers_after = 0;   ///< And after it (for a StreamingDataset, from the next epoch).
  int64_t prefetch_before = 0;  ///< Batches in flight per worker before it.
  int64_t prefetch_after = 0;   ///< And after it.
  double loop_waiting = 0;  ///< Share of the window the training loop waited for data.
  double workers_busy = 0;  ///< Share of the running workers' time they were busy.
  double on_cpu = 0;        ///< Share of the workers' busy time on a CPU (low: waiting on I/O).
  int64_t cpu_budget = 0;   ///< CPUs this process may use (affinity mask and cgroup quota).
  int64_t max_workers = 0;  ///< The most workers it may run (CPUs, I/O and shared memory).
  std::string reason;       ///< Why, in words.
};

/// How many changes LoaderStats::autotune keeps (the latest).
inline constexpr size_t kMaxListedAutotuneChanges = 1000;

/// Where a Loader's time went: a snapshot from Loader::stats(); subtract two for an interval.
struct LoaderStats {
  /// One entry per worker slot (empty with num_workers == 0; with kAuto, every slot the
  /// autotuner may use). A slot's counters add up over the processes it ran: a replaced or
  /// removed worker's stay; its memory is the running process's.
  std::vector<WorkerStats> workers;
  uint64_t batches = 0;  ///< Batches next() returned.
  /// Time the caller spent inside next() (and so in iterator increments): waiting for batches.
  uint64_t wait_ns = 0;
  /// The part of wait_ns spent waiting for the batch due next (in_order) while batches that
  /// come later were already done: head-of-line blocking behind a slow worker.
  uint64_t head_of_line_ns = 0;
  /// Samples the dataset reported skipped (report_skipped_sample()), in every epoch so far.
  uint64_t skipped_samples = 0;
  /// The first kMaxListedSkips of them, in the order the Loader received them; a worker that
  /// skips more than 32 samples between two batches the Loader receives has the rest counted
  /// in skipped_samples but not listed.
  std::vector<SkippedSample> skipped;
  /// Samples quarantined after killing workers (LoaderOptions::quarantine_after), in the order
  /// they were, those a loaded state_dict() named first. Each time a batch leaves one out, it
  /// is also counted in skipped_samples and listed in skipped (substitute -1).
  std::vector<QuarantinedSample> quarantined;
  /// Warnings that a worker's private memory keeps growing (at most one per worker per
  /// epoch), in every epoch so far.
  uint64_t memory_growth_warnings = 0;
  /// Epoch by epoch (the latest kMaxListedEpochs), the running one last; empty with
  /// num_workers == 0.
  std::vector<EpochStats> epochs;
  /// Worker processes running now (with num_workers = kAuto, the autotuner's choice).
  int64_t workers_running = 0;
  /// Batches in flight per worker now.
  int64_t prefetch_factor = 0;
  /// The autotuner's changes (the latest kMaxListedAutotuneChanges), oldest first; empty
  /// without kAuto.
  std::vector<AutotuneChange> autotune;
};

}  // namespace mploader
