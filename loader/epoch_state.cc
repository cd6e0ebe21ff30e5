#include "loader/epoch_state.h"

#include "util/log.h"

#include <mploader/errors.h>

#include <string>

namespace mploader::detail {
namespace {

void check_batches(const std::vector<std::vector<int64_t>>& batches, size_t dataset_size,
                   size_t max_batch) {
  for (size_t b = 0; b < batches.size(); ++b) {
    if (batches[b].empty() || batches[b].size() > max_batch) {
      throw OptionError("batch_sampler",
                        "mploader: the batch sampler returned batch " + std::to_string(b) +
                            " with " + std::to_string(batches[b].size()) +
                            " indices; batches must hold 1 to max_batch_size() = " +
                            std::to_string(max_batch));
    }
    for (int64_t index : batches[b]) {
      if (index < 0 || static_cast<size_t>(index) >= dataset_size) {
        throw OptionError("sampler", "mploader: the sampler produced index " +
                                         std::to_string(index) + " for a dataset of " +
                                         std::to_string(dataset_size) + " samples");
      }
    }
  }
}

// The batches of `plan` not in `delivered`, with their sequences in `plan`.
EpochPlan remaining(uint64_t epoch, std::vector<std::vector<int64_t>> plan,
                    const std::vector<bool>& delivered) {
  EpochPlan left;
  left.epoch = epoch;
  for (size_t s = 0; s < plan.size(); ++s) {
    if (delivered[s]) continue;
    left.batches.push_back(std::move(plan[s]));
    left.sequences.push_back(s);
  }
  return left;
}

}  // namespace

EpochState::EpochState(std::shared_ptr<BatchSampler> sampler, const Dataset& dataset,
                       RecordedSettings settings)
    : sampler_(std::move(sampler)), dataset_(dataset), settings_(settings) {}

std::vector<std::vector<int64_t>> EpochState::plan_of(uint64_t epoch) const {
  return sampler_->batches(dataset_.size(), epoch);
}

uint64_t EpochState::upcoming_epoch() const {
  if (resume_) return resume_->epoch;
  return requested_epoch_ ? *requested_epoch_ : (started_any_ ? epoch_ + 1 : 0);
}

size_t EpochState::upcoming_batches() const {
  if (resume_) return resume_->plan.num_batches;
  return plan_of(upcoming_epoch()).size();
}

EpochPlan EpochState::plan_upcoming() {
  // Whatever ran is abandoned, even when this plan is refused: else the next batch would be
  // one of the old epoch while epoch() named the new one.
  running_ = false;
  epoch_ = upcoming_epoch();
  requested_epoch_.reset();
  started_any_ = true;
  refused_ = false;
  auto batches = plan_of(epoch_);
  try {
    check_batches(batches, dataset_.size(), sampler_->max_batch_size());
  } catch (const OptionError&) {
    // The sampler would give the same plan on every retry: a loop that catches the error to
    // skip a batch would never end. This error ends the epoch; the next next() says so.
    refused_ = true;
    resume_.reset();
    throw;
  }
  plan_ = fingerprint(batches, dataset_.size());
  delivered_.assign(batches.size(), false);
  if (!resume_) return EpochPlan{epoch_, std::move(batches), {}};
  ResumeState resume = std::move(*resume_);
  resume_.reset();
  check_same_plan(resume, plan_, settings_);  // a sampler that is not deterministic
  delivered_ = std::move(resume.delivered);
  return remaining(epoch_, std::move(batches), delivered_);
}

bool EpochState::take_refusal() {
  if (running_ || !refused_) return false;
  refused_ = false;
  return true;
}

void EpochState::received(const Batch& batch) {
  if (batch.sequence() < delivered_.size()) delivered_[batch.sequence()] = true;
}

ResumeState EpochState::state() const {
  if (resume_) return *resume_;
  ResumeState s;
  s.settings = settings_;
  if (running_) {
    s.epoch = epoch_;
    s.plan = plan_;
    s.delivered = delivered_;
    return s;
  }
  s.epoch = upcoming_epoch();
  s.plan = fingerprint(plan_of(s.epoch), dataset_.size());
  s.delivered.assign(s.plan.num_batches, false);
  return s;
}

ResumeState EpochState::state_without(const Batch& ahead) const {
  ResumeState s = state();
  if (ahead.epoch() == s.epoch && ahead.sequence() < s.delivered.size()) {
    s.delivered[ahead.sequence()] = false;
  }
  return s;
}

void EpochState::load(const std::string& text) {
  ResumeState saved = from_text(text);
  check_same_plan(saved, fingerprint(plan_of(saved.epoch), dataset_.size()), settings_);
  running_ = false;  // the next iteration starts the resumed epoch
  refused_ = false;
  requested_epoch_.reset();
  started_any_ = true;
  epoch_ = saved.epoch;
  resume_ = std::move(saved);
}

void EpochState::request(uint64_t epoch) {
  if (resume_ && resume_->epoch != epoch) {
    log().warn("mploader: set_epoch({}) discards the loaded state of epoch {}; epoch {} "
               "starts from its first batch",
               epoch, resume_->epoch, epoch);
    resume_.reset();
  }
  requested_epoch_ = epoch;
}

}  // namespace mploader::detail
