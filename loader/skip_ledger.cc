#include "loader/skip_ledger.h"

#include <cstring>

namespace mploader::detail {

void SkipLedger::add(int64_t index, int64_t substitute, uint64_t epoch, const std::string& source,
                     const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++total_;
  list(SkippedSample{index, substitute, epoch, source, reason});
}

void SkipLedger::list(SkippedSample skipped) {
  if (listed_.size() < kMaxListedSkips) listed_.push_back(std::move(skipped));
}

void SkipLedger::drain(ipc::RegionHeader& header) {
  // Acquire: the records below `written` are complete (worker/skip_log.cc).
  const uint64_t written = header.skips_written.load(std::memory_order_acquire);
  uint64_t read = header.skips_read.load(std::memory_order_relaxed);  // only we store it
  std::lock_guard<std::mutex> lock(mutex_);
  for (; read < written; ++read) {
    const ipc::SkipRecord& r = header.skip_log[read % ipc::kSkipLogCapacity];
    list(SkippedSample{r.index, r.substitute, r.epoch,
                       std::string(r.source, strnlen(r.source, sizeof r.source)),
                       std::string(r.reason, strnlen(r.reason, sizeof r.reason))});
  }
  // Release: our reads of the records happen before the worker reuses them.
  header.skips_read.store(read, std::memory_order_release);
  // The count already taken lives in the region itself: a map keyed by the header's address
  // lost skips when a new pool's region was mapped where an old one had been and its worker
  // had counted past the old total before the first drain.
  const uint64_t total = header.skips_total.load(std::memory_order_relaxed);
  total_ += total - header.skips_counted.load(std::memory_order_relaxed);  // only we store it
  header.skips_counted.store(total, std::memory_order_relaxed);
}

void SkipLedger::fill(LoaderStats& stats) const {
  std::lock_guard<std::mutex> lock(mutex_);
  stats.skipped_samples = total_;
  stats.skipped = listed_;
}

}  // namespace mploader::detail
