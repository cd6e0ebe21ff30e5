// StreamPlan: the epoch of a StreamingDataset for one rank, planned in the training process
// (include/mploader/streaming.h says how, for users). Every rank computes the whole job's
// split from the same inputs, so the ranks agree on their batch counts with no communication.
//
// Pure functions and a value type; no shared state.
#pragma once

#include "sampler/stream_layout.h"
#include "util/sequence_set.h"

#include <mploader/streaming.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mploader::detail {

// The options a stream's plan follows.
struct StreamPlanSettings {
  int64_t batch_size = 1;
  bool drop_last = false;
  bool shuffle = false;  // the shards' order per (seed, epoch)
  uint64_t seed = 0;
  int64_t shuffle_buffer = 0;  // per stream; 0 or 1: read order
  int64_t world_size = 1;
  int64_t rank = 0;
  // Streams per rank the samples are split into: num_workers (1 without workers). A resumed
  // epoch keeps the split it was saved with, whatever num_workers is then.
  int64_t streams = 1;
  UnevenRanks uneven = UnevenRanks::kPad;
};

// One rank's epoch. A single corpus's is computed on demand (layout: memory in its shards, not
// its samples); a StreamMixture's is listed batch by batch.
struct StreamEpoch {
  size_t batches_before_evening = 0;  // this rank's own count, before padding or dropping
  size_t fewest_batches = 0;          // of any rank, before evening out
  size_t most_batches = 0;            // of any rank, before evening out
  size_t padded_batches = 0;          // repeated to reach the job's count (kPad)
  size_t dropped_batches = 0;         // left out to reach it (kDrop)
  size_t split_batches = 0;           // split in two to reach it (a resumed epoch)
  std::vector<std::vector<SampleRange>> streams;  // each stream's ranges, in read order

  // One corpus: the batches as a rule. Null for a listed epoch.
  std::shared_ptr<StreamLayout> layout;
  // A mixture: global indices per batch in delivery order, the stream (worker) of each, and
  // per batch the range of its stream (an index into streams[stream]) that the stream's reader
  // has reached once the batch is read; the shards after that one are what it reads next.
  struct Listed {
    std::vector<std::vector<int64_t>> batches;
    std::vector<int32_t> stream_of_batch;
    std::vector<int32_t> read_unit_of_batch;
  } listed;

  size_t size() const { return layout ? layout->size() : listed.batches.size(); }
  std::vector<int64_t> batch(size_t position) const;
  int32_t stream_of(size_t position) const;
  int32_t read_unit_of(size_t position) const;
  // Calls emit(stream, begin, end) for runs of the global indices that the batches at the
  // positions in `delivered` hold, each sample once (repeated batches left out).
  void for_each_delivered(const SequenceSet& delivered,
                          const std::function<void(size_t, int64_t, int64_t)>& emit) const;
  // A hash of every batch, in order (Loader states name their plan by it).
  uint64_t hash() const;
};

// One stream's reads before its shuffle buffer: global indices in read order, and for each
// read the range of the stream's StreamEpoch::streams entry it falls in (or, when the stream
// reads several ranges at once, the latest one it has begun).
struct StreamReads {
  std::vector<int64_t> order;
  std::vector<int32_t> unit_reached;
};

// Each stream's reads let out through its BlockShuffle and cut into batches (drop_last: its
// short batch left out), the streams' batches alternating, listed in `plan`.
void cut_and_interleave(StreamEpoch& plan, std::vector<StreamReads> reads,
                        const StreamPlanSettings& settings, uint64_t epoch);

// The samples `ranges` hold together.
int64_t total_of(const std::vector<SampleRange>& ranges);

// The samples at offsets [from, to) of the concatenation of `units`, as ranges.
std::vector<SampleRange> slice_ranges(const std::vector<SampleRange>& units, int64_t from,
                                      int64_t to);

// Batches of `samples` samples: the short one counts unless drop_last.
size_t batches_in(int64_t samples, int64_t batch_size, bool drop_last);

// Repeats batches from the epoch's start or leaves the last out until there are `target`
// (padded_batches, dropped_batches).
void pad_or_drop(StreamEpoch& plan, size_t target);

// Splits the largest batches in two, each half in its stream's place, until there are
// `target`: every sample still comes once (split_batches). A batch of one sample cannot
// split; pad_or_drop() then repeats.
void split_to(StreamEpoch& plan, size_t target);

// Plans `epoch` for settings.rank. `shard_sizes` are the shards' sample counts in declared
// order. The shards, in the epoch's order, are read as one sequence cut into equal shares per
// rank (one sample apart at most), and a rank's share into streams of whole batches but the
// last: ranks differ by one batch at most before settings.uneven evens them out. Throws
// OptionError when the corpus has fewer samples than ranks, or a rank would have no batch.
StreamEpoch plan_stream_epoch(const std::vector<int64_t>& shard_sizes,
                              const StreamPlanSettings& settings, uint64_t epoch);

// The samples of `epoch` not in `delivered` (global indices), as ranges in the order the
// epoch reads its shards.
std::vector<SampleRange> remaining_in_read_order(const std::vector<int64_t>& shard_sizes,
                                                 const StreamPlanSettings& settings,
                                                 uint64_t epoch, const SequenceSet& delivered);

// Appends the runs of `unit` not in `done` (a SequenceSet's ranges) to `out`, in order: time in
// the ranges, not the samples.
void append_not_delivered(const SampleRange& unit, const std::vector<SequenceSet::Range>& done,
                          std::vector<SampleRange>& out);

// The rest of `epoch` on settings.world_size ranks after a job state: `remaining` (from
// remaining_in_read_order) is shared out as plan_stream_epoch shares a corpus, and a rank one
// step short splits its largest batch instead of repeating one, so that every remaining sample
// comes exactly once (drop_last: the ranks' short batches are left out). Throws OptionError when
// fewer samples remain than ranks.
StreamEpoch plan_resumed_stream_epoch(const std::vector<SampleRange>& remaining,
                                      const StreamPlanSettings& settings, uint64_t epoch);

// The key of a stream's BlockShuffle in `epoch`.
uint64_t stream_shuffle_key(uint64_t seed, uint64_t epoch, int64_t rank, int64_t stream);

}  // namespace mploader::detail
