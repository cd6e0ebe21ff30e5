#include "worker/skip_log.h"

namespace mploader::worker {

void RegionSkipLog::add(int64_t index, int64_t substitute, uint64_t epoch,
                        const std::string& source, const std::string& reason) {
  header_.skips_total.fetch_add(1, std::memory_order_relaxed);
  const std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t written = header_.skips_written.load(std::memory_order_relaxed);
  // Acquire: the main process has finished reading the records it has freed.
  if (written - header_.skips_read.load(std::memory_order_acquire) >= ipc::kSkipLogCapacity) {
    return;
  }
  ipc::SkipRecord& record = header_.skip_log[written % ipc::kSkipLogCapacity];
  record.index = index;
  record.substitute = substitute;
  record.epoch = epoch;
  ipc::copy_text(record.source, sizeof record.source, source.c_str());
  ipc::copy_text(record.reason, sizeof record.reason, reason.c_str());
  // Release: the record's bytes are visible before the main process sees it counted.
  header_.skips_written.store(written + 1, std::memory_order_release);
}

}  // namespace mploader::worker
