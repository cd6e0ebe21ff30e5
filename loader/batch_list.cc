// BatchList and its kinds (batch_list.h).
#include "loader/batch_list.h"

#include "util/fnv1a.h"

#include <algorithm>

namespace mploader::detail {

// The same hash as a listed plan has always had: the count, then each batch's length and
// indices.
uint64_t BatchList::hash() const {
  Fnv1a h;
  h.add(static_cast<uint64_t>(size()));
  for (size_t b = 0; b < size(); ++b) {
    const std::vector<int64_t> batch = indices(b);
    h.add(static_cast<uint64_t>(batch.size()));
    for (int64_t index : batch) h.add(static_cast<uint64_t>(index));
  }
  return h.value();
}

PlanFingerprint fingerprint(const BatchList& batches, size_t dataset_size) {
  return PlanFingerprint{dataset_size, batches.size(), batches.hash()};
}

RemainingBatches::RemainingBatches(std::shared_ptr<const BatchList> all,
                                   const SequenceSet& delivered)
    : all_(std::move(all)) {
  uint64_t at = 0;
  auto keep = [this](uint64_t begin, uint64_t end) {
    if (end <= begin) return;
    before_.push_back(size_);
    left_.emplace_back(begin, end);
    size_ += static_cast<size_t>(end - begin);
  };
  delivered.for_each_range([&](uint64_t begin, uint64_t end) {
    keep(at, std::min<uint64_t>(begin, all_->size()));
    at = end;
  });
  keep(at, all_->size());
}

uint64_t RemainingBatches::sequence(size_t position) const {
  const auto it = std::upper_bound(before_.begin(), before_.end(), position);
  const size_t run = static_cast<size_t>(it - before_.begin()) - 1;
  return left_[run].first + (position - before_[run]);
}

LeaveOutQuarantined::LeaveOutQuarantined(std::shared_ptr<const BatchList> inner,
                                         std::shared_ptr<Quarantine> quarantine,
                                         std::shared_ptr<SkipLedger> skips, uint64_t epoch)
    : inner_(std::move(inner)), quarantine_(std::move(quarantine)), skips_(std::move(skips)),
      epoch_(epoch) {}

std::vector<int64_t> LeaveOutQuarantined::indices(size_t position) const {
  std::vector<int64_t> batch = inner_->indices(position);
  const std::vector<int64_t> left_out = quarantine_->leave_out(batch);
  if (position >= first_unseen_) {
    for (int64_t index : left_out) report(index);
    first_unseen_ = position + 1;
  }
  return batch;
}

void LeaveOutQuarantined::report(int64_t index) const {
  std::string reason = "quarantined";
  for (const QuarantinedSample& s : quarantine_->list()) {
    if (s.index == index) reason = quarantine_reason(s);
  }
  skips_->add(index, -1, epoch_, "", reason);
}

}  // namespace mploader::detail
