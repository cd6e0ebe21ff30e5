// ResumeState: what Loader::state_dict() saves and load_state_dict() restores, so that a
// program restarted from a checkpoint gets exactly the batches of an epoch it had not yet
// received.
//
// The epoch's batch plan (every batch's index list) is not stored: the sampler recomputes it
// from (dataset_size, epoch), and a 64-bit fingerprint of it proves the recomputed plan is the
// one the state was taken from. Batches are named by their sequence in that plan.
//
// Plain value type; no shared state.
#pragma once

#include "util/sequence_set.h"

#include <mploader/stats.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mploader::detail {

// The identity of one epoch's batch plan.
struct PlanFingerprint {
  uint64_t dataset_size = 0;
  uint64_t num_batches = 0;
  uint64_t hash = 0;  // BatchList::hash(): of every batch's length and indices, in order
};

// fingerprint(const BatchList&, size_t) is in batch_list.h.

// Options recorded so that a refused state can name what changed; the fingerprint alone
// decides whether a state applies.
struct RecordedSettings {
  int64_t batch_size = 0;
  bool drop_last = false;
  bool shuffle = false;
  uint64_t seed = 0;
  bool in_order = true;
  int64_t num_workers = 0;
};

// A run of a stream's units (shard ranges, in the order the stream reads them) that was
// partly delivered: the shard's name and the range's global indices [begin, end).
struct UnitProgress {
  std::string shard;
  int64_t begin = 0;
  int64_t end = 0;
  int64_t delivered = 0;  // of its samples, in batches the training loop received
};

// How far one stream (worker) of this rank got in the saved epoch. Its units are read in order,
// so the fully delivered ones form few runs and few are partly delivered at once: the record
// stays small however many shards there are.
struct StreamPartProgress {
  int64_t units = 0;      // shard ranges the stream reads in the epoch
  int64_t samples = 0;    // their samples together
  int64_t delivered = 0;  // of those, in batches the training loop received
  std::vector<std::pair<int64_t, int64_t>> done;  // runs [first, end) of units fully delivered
  std::vector<UnitProgress> partial;              // units partly delivered
};

// What a state of a StreamingDataset's loader adds: the corpus and the split it was planned
// with, and its progress per stream (for people and tools; the batches decide what resumes).
struct StreamProgress {
  int64_t streams = 1;  // the split per rank the epoch was planned with (its num_workers)
  uint64_t corpus = 0;  // StreamingDataset::corpus_fingerprint()
  int64_t world_size = 1;
  int64_t rank = 0;
  std::string first_shard;  // the first shard this rank reads, for messages
  std::vector<StreamPartProgress> progress;  // per stream; empty in a state of the old form
};

// What lets a state resume on another number of ranks: this rank's part of the epoch's global
// order (the positions it delivered), which merge_loader_states() unites across the ranks into
// a job state (loader/job_state.h). Set for a StreamingDataset and an ElasticSampler.
struct ElasticProgress {
  uint64_t order = 0;      // fingerprint of the global order: data, seed, shuffle, sampler
  uint64_t positions = 0;  // in the epoch's global order
  int64_t world_size = 1;
  int64_t rank = 0;
  uint64_t steps = 0;  // batches this rank's training loop received in the epoch
  uint64_t base = 0;   // the job state this epoch resumed from (its checksum); 0: a fresh epoch
  SequenceSet delivered;  // positions delivered: this rank's, and all of the base's
};

struct ResumeState {
  uint64_t epoch = 0;
  PlanFingerprint plan;
  SequenceSet delivered;  // by sequence; size plan.num_batches
  RecordedSettings settings;
  std::optional<StreamProgress> stream;  // set for a StreamingDataset
  std::optional<ElasticProgress> elastic;
  // Samples quarantined after killing workers (report_path left empty): a resumed loader
  // leaves them out. A state without the field (any state saved before it existed) has none.
  std::vector<QuarantinedSample> quarantined;
};

// Versioned JSON text with a checksum over its contents.
std::string to_text(const ResumeState& state);
// Throws OptionError("state") naming the field and the fix for text that is not JSON, is
// truncated, of another version, altered, or inconsistent.
ResumeState from_text(const std::string& text);
// Throws OptionError("state") when `current` (this loader's plan for saved.epoch) differs from
// the saved one, naming the dataset size, batch count and recorded options that differ.
// Throws OptionError("state") when a state saved over a StreamingDataset is loaded over
// another corpus, rank or world size, or over a map-style dataset (`now` empty), or the reverse.
void check_same_stream(const ResumeState& saved, const std::optional<StreamProgress>& now);
void check_same_plan(const ResumeState& saved, const PlanFingerprint& current,
                     const RecordedSettings& current_settings);

}  // namespace mploader::detail
