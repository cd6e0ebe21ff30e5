// JobState: one epoch's progress over every rank of a job, merged from the ranks' own states
// (merge_loader_states(), include/mploader/elastic.h): which positions of the epoch's global
// order some rank delivered. A Loader on any number of ranks resumes the epoch from it.
//
// Plain value type and pure functions; no shared state.
#pragma once

#include "loader/resume_state.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mploader::detail {

struct JobState {
  uint64_t epoch = 0;
  uint64_t order = 0;      // ElasticProgress::order of every rank
  uint64_t positions = 0;  // in the epoch's global order
  int64_t world_size = 1;  // of the ranks merged
  uint64_t steps = 0;      // each of them took in the epoch
  SequenceSet delivered;   // positions
  RecordedSettings settings;  // rank 0's, to name what differs
  std::vector<QuarantinedSample> quarantined;
  uint64_t id = 0;  // the checksum of its text: a rank resumed from it records it as its base
};

// Versioned JSON with a checksum, like a rank's state; another version key, so that neither
// is taken for the other.
std::string to_text(const JobState& job);
// True when `text` is JSON with a job state's version key (intact or not: job_from_text says).
bool looks_like_job_state(const std::string& text);
// Throws OptionError("state") naming the field and the fix.
JobState job_from_text(const std::string& text);
// Throws OptionError("state") naming the rank and the fix (see merge_loader_states()).
JobState merge(const std::vector<ResumeState>& ranks);

}  // namespace mploader::detail
