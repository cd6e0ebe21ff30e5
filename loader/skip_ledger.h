// SkipLedger: the samples datasets reported skipped (report_skipped_sample()), gathered for
// LoaderStats from every worker's region and, with num_workers = 0, straight from the dataset.
#pragma once

#include "core/loading_scope.h"
#include "ipc/region_layout.h"

#include <mploader/stats.h>

#include <mutex>
#include <vector>

namespace mploader::detail {

class SkipLedger : public SkipSink {
 public:
  // num_workers = 0: the dataset's report, in the training process.
  void add(int64_t index, int64_t substitute, uint64_t epoch, const std::string& source,
           const std::string& reason) override;
  // Takes a worker's new records and its count; frees the records for the worker. Called
  // after every batch the Loader receives, so a worker's log of 32 rarely fills.
  void drain(ipc::RegionHeader& header);
  // Sets stats.skipped_samples and stats.skipped.
  void fill(LoaderStats& stats) const;

 private:
  void list(SkippedSample skipped);  // mutex_ held

  mutable std::mutex mutex_;
  uint64_t total_ = 0;
  std::vector<SkippedSample> listed_;
};

}  // namespace mploader::detail
