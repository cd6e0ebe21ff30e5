// Where a Loader's batches come from: worker processes (Dispatcher) or the calling thread
// (InProcessSource). Both deliver the same Batch objects for the same sampler order.
#pragma once

#include <mploader/batch.h>
#include <mploader/stats.h>

#include <optional>
#include <vector>

namespace mploader::detail {

// Batch `position`'s sequence in the epoch's full plan, given the `sequences` passed to
// BatchSource::start_epoch (empty: the identity).
inline uint64_t plan_sequence(const std::vector<uint64_t>& sequences, size_t position) {
  return sequences.empty() ? position : sequences[position];
}

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // Abandons what is left of the current epoch and starts delivering `batches`.
  // `sequences[i]` is batch i's position in the epoch's full plan (Batch::sequence()); empty
  // means 0, 1, ...: a resumed epoch delivers only the batches not yet delivered.
  // `streams[i]`, when not empty, is batch i's stream: worker streams[i] % num_workers must
  // build it (a StreamingDataset's shard stays with one worker).
  virtual void start_epoch(std::vector<std::vector<int64_t>> batches,
                           std::vector<uint64_t> sequences, std::vector<int32_t> streams,
                           uint64_t epoch) = 0;
  // The next batch, or nullopt at the end of the epoch.
  virtual std::optional<Batch> next() = 0;
  // Time next() waited for the batch due while later ones were ready (LoaderStats).
  virtual uint64_t head_of_line_ns() const { return 0; }
  // Fills each worker's memory and the memory-growth warnings (LoaderStats); no workers here.
  virtual void add_memory(LoaderStats& stats) const { (void)stats; }
};

}  // namespace mploader::detail
