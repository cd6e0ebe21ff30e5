/// @file
/// StreamingDataset: a dataset made of shards (files, or any countable units) that are read
/// front to back: token corpora, tar shards, anything whose samples are counted up front but
/// read in order.
///
///   class MyShards : public mploader::StreamingDataset {
///    public:
///     MyShards() { declare_shards({{"a.bin", 1000}, {"b.bin", 800}}); }
///     mploader::Sample get(int64_t index) override {
///       mploader::ShardPosition at = locate(index);  // shard and sample in it
///       ...
///     }
///   };
///
/// The Loader plans the epoch itself (LoaderOptions::sampler and batch_sampler stay unset):
///   1. the shards are put in order, shuffled per (seed, epoch) when LoaderOptions::shuffle;
///   2. the shards in that order are read as one sequence, cut into one run per rank
///      (LoaderOptions::world_size and rank, or the launcher's), the runs equal to a sample;
///   3. each rank's run is cut into one run per worker, a whole number of batches each but the
///      last, and a worker reads its run in order, each block of
///      LoaderOptions::shuffle_buffer samples handed out in a random order;
///   4. each worker's stream is cut into batches of batch_size (drop_last drops the rank's short
///      last batch), and the batches of the workers alternate, as with PyTorch's
///      IterableDataset;
///   5. the ranks then differ by one batch at most, and every rank gets the same number of
///      batches (LoaderOptions::uneven_ranks).
/// Every sample of the epoch is read once, by one worker of one rank. A shard at the border of
/// two runs is read in part by each, so no worker idles whatever the shard sizes.
///
/// Batches carry the global indices of their samples (Batch::indices()), so a batch names
/// the shard and position of each of its samples through locate(). state_dict() records the
/// epoch's progress per worker stream (a few KB for any number of shards), and
/// load_state_dict() resumes with exactly the samples not yet delivered, also with another
/// num_workers, and, from a job state, on another number of ranks (elastic.h). A worker that
/// dies is replaced (max_restarts_per_epoch) and its batches are issued again to its
/// replacement.
#pragma once

#include <mploader/dataset.h>
#include <mploader/mixture_end.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mploader {

/// What a StreamingDataset's ranks do when they hold different numbers of batches in an epoch
/// (LoaderOptions::uneven_ranks): DDP waits forever for a rank that stopped early, so every
/// rank gets the same count.
enum class UnevenRanks {
  /// Ranks short of batches repeat their first batches of the epoch (the samples in them
  /// come twice); no sample is left out.
  kPad,
  /// Every rank stops after as many batches as the rank with the fewest; the rest of the
  /// longer ranks' samples are left out of that epoch.
  kDrop,
};

/// One shard of a StreamingDataset.
struct ShardInfo {
  std::string name;         ///< Names the shard in messages and saved states (its path).
  int64_t num_samples = 0;  ///< Samples it holds; 0 is allowed (the shard is never read).
};

/// Where a global sample index lies: its shard, and its position in that shard.
struct ShardPosition {
  size_t shard = 0;     ///< Index into shards().
  int64_t sample = 0;   ///< 0 .. shards()[shard].num_samples - 1
};

/// How the epochs of a StreamingDataset that mixes several corpora are drawn
/// (StreamMixture, stream_mixture.h): the Loader plans them with it.
struct StreamMixSpec {
  /// Shards per source: source k's shards follow source k - 1's in shards().
  std::vector<size_t> source_shards;
  /// Each source's chance of being drawn; the weights divided by their sum.
  std::vector<double> probabilities;
  /// When the epoch ends: kFirstExhausted where the job's first run of a source is read
  /// through; the others per worker (stream_mixture.h).
  MixtureEnd end = MixtureEnd::kFirstExhausted;
  /// Draws per epoch over all ranks and workers: kCycle's length (0: the sources' total), an
  /// upper bound for the others (0: none).
  int64_t num_samples = 0;
};

/// A dataset of shards with known sample counts; see the file comment for how a Loader plans
/// its epochs. Subclasses call declare_shards() in their constructor and implement get() or
/// sample_layout() and write() (Dataset) for global indices, which locate() turns into a shard
/// and a position. A Loader asks for the samples of one shard in increasing order within a
/// worker, except within a shuffle block (LoaderOptions::shuffle_buffer) or after a restart, so a
/// reader that keeps its place in the current shard reads each shard once, front to back.
///
/// Not thread-safe: each worker process has its own copy (Dataset).
class StreamingDataset : public Dataset {
 public:
  /// The shards, in the order declared.
  const std::vector<ShardInfo>& shards() const { return shards_; }
  /// Samples of every shard together.
  size_t size() const final { return static_cast<size_t>(total_); }
  /// The shard and position of global sample `index`, in [0, size()); throws
  /// OptionError("index", ...) naming the index and the size otherwise.
  ShardPosition locate(int64_t index) const;
  /// The global index of sample `sample` of shard `shard`; throws OptionError("sample", ...)
  /// when the shard holds no such sample.
  int64_t global_index(size_t shard, int64_t sample) const;
  /// A 64-bit hash of the shards' names and counts, in order: a state saved over another
  /// corpus is refused by it.
  uint64_t corpus_fingerprint() const;

  /// What the Loader should warn about when it reads this dataset through a shuffle buffer of
  /// `shuffle_buffer` samples (LoaderOptions::shuffle_buffer): empty when that is fine. A
  /// dataset read front to back that keeps only so many samples read ahead says so here.
  virtual std::string shuffle_buffer_warning(int64_t shuffle_buffer) const {
    (void)shuffle_buffer;
    return {};
  }

  /// Called in a worker process before it builds each batch: `shards` names the shards
  /// (indices into shards()) that this worker's stream reads from now on, in order: the one
  /// it reaches with this batch first, then at most three after it. A dataset whose shards
  /// come from a slow store (TarShards reading URLs) starts fetching those it has not opened
  /// yet in the background, so that the next shard is there when the stream reaches it; it
  /// must return at once. The default does nothing.
  virtual void prefetch_shards(const std::vector<size_t>& shards) { (void)shards; }

  /// Non-null for a dataset whose shards are several corpora to be mixed (StreamMixture): each
  /// worker then reads shards of every source and interleaves their samples by weighted draws.
  /// The default, null: one corpus.
  virtual const StreamMixSpec* stream_mix() const { return nullptr; }

 protected:
  /// Sets the shards; call it once, in the constructor. Throws OptionError("shards", ...) naming
  /// the shard when a count is negative, or when the counts overflow int64.
  void declare_shards(std::vector<ShardInfo> shards);

 private:
  std::vector<ShardInfo> shards_;
  std::vector<int64_t> starts_;  // global index of each shard's sample 0
  int64_t total_ = 0;
};

}  // namespace mploader
