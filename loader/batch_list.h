// BatchList: the batches of one epoch that a BatchSource runs, by position. A sampler's batches
// are listed; a StreamingDataset's are computed from its plan as they are needed, so an epoch
// of a trillion samples costs memory in its shards, not its samples.
//
// Lists are immutable, but LeaveOutQuarantined records skips as it hands batches out: used by
// one thread (the Loader's).
#pragma once

#include "loader/resume_state.h"
#include "loader/skip_ledger.h"
#include "sampler/stream_plan.h"
#include "supervise/quarantine.h"
#include "util/sequence_set.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace mploader::detail {

class BatchList {
 public:
  virtual ~BatchList() = default;
  virtual size_t size() const = 0;
  // The dataset indices batch `position` loads.
  virtual std::vector<int64_t> indices(size_t position) const = 0;
  // Its indices as planned, before any are left out (quarantined samples).
  virtual std::vector<int64_t> planned(size_t position) const { return indices(position); }
  // The stream whose worker must build it (worker stream % num_workers); -1: any worker.
  virtual int32_t stream(size_t position) const {
    (void)position;
    return -1;
  }
  // Its sequence in the epoch's full plan (Batch::sequence()).
  virtual uint64_t sequence(size_t position) const { return position; }
  // A hash of every batch in order: a saved state names its plan by it.
  virtual uint64_t hash() const;
};

// The plan's fingerprint a saved state records: its batch count and hash().
PlanFingerprint fingerprint(const BatchList& batches, size_t dataset_size);

// A sampler's batches, as it returned them.
class ListedBatches final : public BatchList {
 public:
  explicit ListedBatches(std::vector<std::vector<int64_t>> batches)
      : batches_(std::move(batches)) {}
  size_t size() const override { return batches_.size(); }
  std::vector<int64_t> indices(size_t position) const override { return batches_[position]; }
  const std::vector<std::vector<int64_t>>& all() const { return batches_; }

 private:
  std::vector<std::vector<int64_t>> batches_;
};

// A StreamingDataset's epoch, each batch computed from the plan when asked for.
class StreamBatches final : public BatchList {
 public:
  explicit StreamBatches(std::shared_ptr<const StreamEpoch> plan) : plan_(std::move(plan)) {}
  size_t size() const override { return plan_->size(); }
  std::vector<int64_t> indices(size_t position) const override {
    return plan_->batch(position);
  }
  int32_t stream(size_t position) const override { return plan_->stream_of(position); }
  uint64_t hash() const override { return plan_->hash(); }

 private:
  std::shared_ptr<const StreamEpoch> plan_;
};

// The batches of `all` whose sequences are not in `delivered` (a resumed epoch's rest).
class RemainingBatches final : public BatchList {
 public:
  RemainingBatches(std::shared_ptr<const BatchList> all, const SequenceSet& delivered);
  size_t size() const override { return size_; }
  std::vector<int64_t> indices(size_t position) const override {
    return all_->indices(sequence(position));
  }
  int32_t stream(size_t position) const override { return all_->stream(sequence(position)); }
  uint64_t sequence(size_t position) const override;

 private:
  std::shared_ptr<const BatchList> all_;
  std::vector<SequenceSet::Range> left_;  // runs of sequences not delivered
  std::vector<uint64_t> before_;          // positions in the runs before each one
  size_t size_ = 0;
};

// `inner` without the samples `quarantine` holds: each left out is reported skipped (with the
// quarantine's reason) the first time its batch is handed out. The quarantine is read live,
// so a sample quarantined mid-epoch is left out of every batch handed out after.
class LeaveOutQuarantined final : public BatchList {
 public:
  LeaveOutQuarantined(std::shared_ptr<const BatchList> inner,
                      std::shared_ptr<Quarantine> quarantine, std::shared_ptr<SkipLedger> skips,
                      uint64_t epoch);
  size_t size() const override { return inner_->size(); }
  std::vector<int64_t> indices(size_t position) const override;
  std::vector<int64_t> planned(size_t position) const override {
    return inner_->planned(position);
  }
  int32_t stream(size_t position) const override { return inner_->stream(position); }
  uint64_t sequence(size_t position) const override { return inner_->sequence(position); }
  uint64_t hash() const override { return inner_->hash(); }
  // Reports `index` skipped once more: for a batch handed out before the sample was
  // quarantined, and not yet received.
  void report(int64_t index) const;

 private:
  std::shared_ptr<const BatchList> inner_;
  std::shared_ptr<Quarantine> quarantine_;
  std::shared_ptr<SkipLedger> skips_;
  uint64_t epoch_;
  mutable size_t first_unseen_ = 0;  // positions before it were handed out (and reported)
};

}  // namespace mploader::detail
