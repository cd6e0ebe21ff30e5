// The worker's end of the skip log in its region header: report_skipped_sample() in a worker
// process lands here, and the main process drains it (loader/skip_ledger.h).
#pragma once

#include "core/loading_scope.h"
#include "ipc/region_layout.h"

#include <mutex>

namespace mploader::worker {

class RegionSkipLog : public detail::SkipSink {
 public:
  explicit RegionSkipLog(ipc::RegionHeader& header) : header_(header) {}
  // Counts the skip; lists it too while the log has room (the main process frees records as it
  // receives batches). Never waits on the main process: a full log must not stall the batch.
  // Threads the dataset starts may report too: the log has one producer, the mutex.
  void add(int64_t index, int64_t substitute, uint64_t epoch, const std::string& source,
           const std::string& reason) override;

 private:
  ipc::RegionHeader& header_;
  std::mutex mutex_;  // this process's reporting threads; never in shared memory
};

}  // namespace mploader::worker
