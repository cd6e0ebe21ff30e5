// StreamLayout: one rank's epoch of a StreamingDataset as a rule, not a list. It keeps each
// stream's ranges of global indices (a few per shard) and computes any batch's indices, its
// stream and how far its stream has read, on demand: an epoch of a trillion samples costs
// memory in its shards, and batch b is found without the batches before it.
//
// The batches are those the plan describes (stream_plan.h): each stream's reads, let out
// through its BlockShuffle, cut into batches of batch_size; the streams' batches alternate;
// then the rank evens out with the others: it splits its first largest batches in two
// (split_to), repeats batches from its start or leaves its last out (pad_or_drop).
//
// Immutable once evened out; safe to read from any thread.
#pragma once

#include "sampler/block_shuffle.h"
#include "util/sequence_set.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace mploader::detail {

// A run of consecutive global sample indices [begin, end), all in one shard.
struct SampleRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
};

class StreamLayout {
 public:
  // `streams`: each stream's ranges in read order. `keys[k]` picks stream k's shuffle.
  StreamLayout(const std::vector<std::vector<SampleRange>>& streams, int64_t batch_size,
               bool drop_last, int64_t shuffle_block, const std::vector<uint64_t>& keys);

  // Batches, once evened out.
  size_t size() const { return total_; }
  // The rank's own batches, before evening out.
  size_t own_batches() const { return base_; }
  std::vector<int64_t> batch(size_t position) const;
  int32_t stream_of(size_t position) const;
  // The index into its stream's ranges of the range its reader has reached once the batch is
  // read (its shuffle block read through).
  int32_t read_unit_of(size_t position) const;

  // Splits the first largest batches in two until there are `target` (a batch of one sample
  // cannot split); returns how many it split. Call before pad_or_drop().
  size_t split_to(size_t target);
  // Repeats batches from the start, or leaves the last out, until there are `target`;
  // returns how many it repeated (positive) or left out (negative).
  int64_t pad_or_drop(size_t target);

  // Calls emit(stream, begin, end) for runs of the global indices of the batches at the
  // positions in `delivered`: each sample once, repeated batches left out. A delivered prefix
  // costs time in the streams' ranges, not in its samples.
  void for_each_delivered(const SequenceSet& delivered,
                          const std::function<void(size_t, int64_t, int64_t)>& emit) const;
  // A hash of everything that decides the batches.
  uint64_t hash() const;

 private:
  struct Stream {
    std::vector<SampleRange> ranges;
    std::vector<int64_t> starts;  // offset of each range in the stream's reads
    int64_t samples = 0;
    size_t batches = 0;
    BlockShuffle shuffle;
  };
  // A position before evening out: stream k's batch `round`.
  struct Slot {
    size_t stream = 0;
    size_t round = 0;
    int half = 0;  // 0: the whole batch; 1, 2: the first or second half of a split one
  };

  size_t before_round(size_t round) const;
  // The position after base position `base`'s slots (two for a split batch).
  size_t end_slot(size_t base) const;  // base positions in rounds before `round`
  Slot base_slot(size_t base) const;
  Slot slot_of(size_t position) const;
  int64_t batch_length(const Slot& s) const;
  // The outputs [begin, end) of stream k that the slot holds.
  std::pair<int64_t, int64_t> outputs_of(const Slot& s) const;
  // The index of the range of `s` that its read number `read` falls in, and that read's
  // global index.
  static size_t unit_of(const Stream& s, int64_t read);
  int64_t global_of(const Stream& s, int64_t read) const;
  // The stream's batches at base positions before `base`.
  size_t stream_batches_before(size_t stream, size_t base) const;
  // Emits the reads of outputs [0, end) of stream k: whole blocks as ranges.
  void emit_prefix(size_t k, int64_t end,
                   const std::function<void(size_t, int64_t, int64_t)>& emit) const;
  void emit_reads(size_t k, int64_t read_begin, int64_t read_end,
                  const std::function<void(size_t, int64_t, int64_t)>& emit) const;

  std::vector<Stream> streams_;
  int64_t batch_size_ = 1;
  bool drop_last_ = false;
  size_t most_rounds_ = 0;
  size_t base_ = 0;               // batches before evening out
  std::vector<size_t> split_;     // base positions split in two, ascending
  size_t listed_ = 0;             // base_ + split_.size()
  size_t total_ = 0;              // after pad_or_drop()
};

}  // namespace mploader::detail
