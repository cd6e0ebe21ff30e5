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

/// One worker's counters (see LoaderStats).
struct WorkerStats {
  /// Time spent building batches (Dataset::get, collation, publishing), from taking a task to
  /// handing it back. Idle time waiting for tasks is not counted.
  uint64_t busy_ns = 0;
  uint64_t batches = 0;  ///< Tasks finished, cancelled ones included.
};

/// A sample a dataset could not load and replaced with another (report_skipped_sample()).
struct SkippedSample {
  int64_t index = -1;       ///< The sample the batch asked for.
  int64_t substitute = -1;  ///< The sample loaded in its place; -1 when none was.
  uint64_t epoch = 0;       ///< The epoch of the batch.
  std::string source;       ///< Where the dataset read it from (a file's path).
  std::string reason;       ///< Why it could not be loaded (the decoder's message).
};

/// How many skipped samples LoaderStats::skipped lists; skipped_samples counts them all.
inline constexpr size_t kMaxListedSkips = 1000;

/// Where a Loader's time went: a snapshot from Loader::stats(); subtract two for an interval.
struct LoaderStats {
  /// One entry per worker slot (empty with num_workers == 0). A replaced worker's counters
  /// start again from zero.
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
};

}  // namespace mploader
