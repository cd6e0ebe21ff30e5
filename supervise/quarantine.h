// Quarantine: samples that killed workers, left out of every batch from then on
// (LoaderOptions::quarantine_after). The supervisor counts each death whose crash record names
// the sample being read and decides, before it writes the report, whether this death puts the
// sample in quarantine; the dispatcher then issues the dead worker's batches again without it;
// the loader leaves quarantined samples out of each epoch's plan, lists them in stats() and
// saves them in state_dict().
//
// Thread-safe: the supervisor's thread decides while the training thread reads.
#pragma once

#include <mploader/stats.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace mploader::detail {

struct QuarantineSettings {
  int64_t after = 0;          // deaths on one sample that quarantine it; 0: off
  int64_t max_per_epoch = 0;  // samples quarantined in one epoch, at most
};

// What one death on a sample means for it.
struct QuarantineVerdict {
  int64_t index = -1;   // the sample the worker died on
  int64_t deaths = 0;   // worker deaths on it so far, this one included
  bool quarantined = false;  // this death quarantined it
  bool already = false;      // it was quarantined before (a batch issued before that)
  std::string note;  // for the report: why it is, or is not yet, quarantined

  // The dispatcher leaves the sample out and restarts the worker off the restart budget.
  bool leave_out() const { return quarantined || already; }
};

class Quarantine {
 public:
  explicit Quarantine(QuarantineSettings settings) : settings_(settings) {}

  // Deaths decide nothing while off; samples a loaded state names are left out all the same.
  bool enabled() const { return settings_.after > 0; }
  const QuarantineSettings& settings() const { return settings_; }
  // The epoch that deaths from now on belong to (the cap counts per epoch).
  void start_epoch(uint64_t epoch);
  // A worker died by `cause` while reading sample `index`: counts it, and quarantines the
  // sample on its settings.after-th death unless the epoch's cap is reached.
  QuarantineVerdict on_death(int64_t index, const std::string& cause);
  // The crash report of the death that quarantined `index`.
  void set_report(int64_t index, const std::string& path);
  bool contains(int64_t index) const;
  bool empty() const;
  // In the order they were quarantined.
  std::vector<QuarantinedSample> list() const;
  // A loaded state's samples join the quarantine (those already in it are kept as they are).
  void restore(const std::vector<QuarantinedSample>& samples);
  // Takes the quarantined samples out of `batch`; returns them, in the batch's order.
  std::vector<int64_t> leave_out(std::vector<int64_t>& batch) const;

 private:
  bool contains_locked(int64_t index) const;

  const QuarantineSettings settings_;
  mutable std::mutex mutex_;
  uint64_t epoch_ = 0;
  int64_t quarantined_this_epoch_ = 0;
  std::map<int64_t, int64_t> deaths_;  // by sample, over the loader's life
  std::vector<QuarantinedSample> samples_;
  std::map<int64_t, size_t> position_;  // samples_'s entry of each quarantined index
};

// "a skipped sample's reason" for a quarantined one, as LoaderStats::skipped lists it.
std::string quarantine_reason(const QuarantinedSample& sample);

}  // namespace mploader::detail
