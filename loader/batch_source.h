// Where a Loader's batches come from: worker processes (Dispatcher) or the calling thread
// (InProcessSource). Both deliver the same Batch objects for the same sampler order.
#pragma once

#include "loader/batch_list.h"

#include <mploader/batch.h>
#include <mploader/stats.h>

#include <memory>
#include <optional>

namespace mploader::detail {

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // Abandons what is left of the current epoch and starts delivering `batches`, in order.
  // Each one's sequence (BatchList::sequence) is its position in the epoch's full plan (a
  // resumed epoch delivers only the batches not yet delivered); a batch with a stream must be
  // built by worker stream % num_workers (a StreamingDataset's shard stays with one worker).
  // A batch left empty (its samples quarantined) is counted delivered and not returned.
  virtual void start_epoch(std::shared_ptr<const BatchList> batches, uint64_t epoch) = 0;
  // The next batch, or nullopt at the end of the epoch.
  virtual std::optional<Batch> next() = 0;
  // Time next() waited for the batch due while later ones were ready (LoaderStats).
  virtual uint64_t head_of_line_ns() const { return 0; }
  // Fills each worker's memory and the memory-growth warnings (LoaderStats); no workers here.
  virtual void add_memory(LoaderStats& stats) const { (void)stats; }
};

}  // namespace mploader::detail
