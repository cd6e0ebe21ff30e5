#include "supervise/quarantine.h"

#include <algorithm>

namespace mploader::detail {

void Quarantine::start_epoch(uint64_t epoch) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (epoch != epoch_) quarantined_this_epoch_ = 0;
  epoch_ = epoch;
}

QuarantineVerdict Quarantine::on_death(int64_t index, const std::string& cause) {
  std::lock_guard<std::mutex> lock(mutex_);
  QuarantineVerdict v;
  v.index = index;
  v.deaths = ++deaths_[index];
  const std::string option = "LoaderOptions::quarantine_after = " + std::to_string(settings_.after);
  if (contains_locked(index)) {
    QuarantinedSample& s = samples_[position_[index]];
    s.deaths = v.deaths;
    v.already = true;
    v.note = "sample " + std::to_string(index) + " was already quarantined; this worker had "
             "been given it before that";
    return v;
  }
  if (v.deaths < settings_.after) {
    v.note = "death " + std::to_string(v.deaths) + " on sample " + std::to_string(index) +
             "; it is quarantined at " + std::to_string(settings_.after) + " (" + option + ")";
    return v;
  }
  if (quarantined_this_epoch_ >= settings_.max_per_epoch) {
    v.note = "sample " + std::to_string(index) + " killed " + std::to_string(v.deaths) +
             " workers, but " + std::to_string(quarantined_this_epoch_) +
             " samples are already quarantined in epoch " + std::to_string(epoch_) +
             " (LoaderOptions::max_quarantined_per_epoch = " +
             std::to_string(settings_.max_per_epoch) + "): the dataset, not a few samples, "
             "looks broken";
    return v;
  }
  ++quarantined_this_epoch_;
  position_[index] = samples_.size();
  samples_.push_back(QuarantinedSample{index, epoch_, v.deaths, cause, ""});
  v.quarantined = true;
  v.note = "sample " + std::to_string(index) + " killed " + std::to_string(v.deaths) +
           " workers: quarantined (" + option + "); it is left out of its batch and of every "
           "later one";
  return v;
}

void Quarantine::set_report(int64_t index, const std::string& path) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (contains_locked(index)) samples_[position_[index]].report_path = path;
}

bool Quarantine::contains_locked(int64_t index) const { return position_.count(index) != 0; }

bool Quarantine::contains(int64_t index) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return contains_locked(index);
}

bool Quarantine::empty() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return samples_.empty();
}

std::vector<QuarantinedSample> Quarantine::list() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return samples_;
}

void Quarantine::restore(const std::vector<QuarantinedSample>& samples) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const QuarantinedSample& s : samples) {
    if (contains_locked(s.index)) continue;
    position_[s.index] = samples_.size();
    samples_.push_back(s);
    deaths_[s.index] = std::max(deaths_[s.index], s.deaths);
  }
}

std::vector<int64_t> Quarantine::leave_out(std::vector<int64_t>& batch) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<int64_t> left_out;
  if (samples_.empty()) return left_out;
  auto kept = std::remove_if(batch.begin(), batch.end(), [&](int64_t index) {
    if (!contains_locked(index)) return false;
    left_out.push_back(index);
    return true;
  });
  batch.erase(kept, batch.end());
  return left_out;
}

std::string quarantine_reason(const QuarantinedSample& s) {
  std::string reason = "quarantined: " + std::to_string(s.deaths) + " workers died on it (" +
                       (s.cause.empty() ? "crash" : s.cause) + ")";
  if (!s.report_path.empty()) reason += "; crash report " + s.report_path;
  return reason;
}

}  // namespace mploader::detail
