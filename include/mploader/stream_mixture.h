/// @file
/// StreamMixture: several streaming corpora (TarShards, TokenStream, any StreamingDataset) in
/// fixed proportions, as in a language model's data mix (web, books and code at 0.5 / 0.3 /
/// 0.2), each still read shard by shard, front to back.
///
///   mploader::StreamMixtureOptions mix;
///   mix.weights = {0.5, 0.3, 0.2};
///   mix.end = mploader::MixtureEnd::kFirstExhausted;
///   auto data = std::make_shared<mploader::StreamMixture>(
///       std::vector<std::shared_ptr<mploader::StreamingDataset>>{web, books, code}, mix);
///   mploader::Loader loader(data, options);  // no sampler: the Loader plans the mixture
///
/// How an epoch is planned (the Loader does it; streaming.h describes one corpus):
///   1. each source's shards are put in order, shuffled per (seed, epoch, source) with
///      LoaderOptions::shuffle;
///   2. each source's shards, read as one sequence, are cut into one run per worker of every
///      rank (world_size x num_workers runs, equal to a sample);
///   3. each worker draws from its runs: a source with probability weight / sum of weights,
///      then that source's next sample, from a generator seeded per (seed, epoch, rank,
///      worker), until MixtureEnd says its stream is over (a source "runs out" when the worker
///      has read its whole run). kFirstExhausted ends the whole job's epoch at the first run
///      read through: every worker stops after as many draws as the worker that got there
///      first, so the ranks take equal steps and no sample comes twice;
///   4. each worker's stream goes through its shuffle buffer (LoaderOptions::shuffle_buffer)
///      and is cut into batches, as for one corpus, and the ranks are evened out
///      (LoaderOptions::uneven_ranks).
/// A worker thus holds one open shard per source, and reads each of them sequentially: the
/// index path (a ConcatDataset under a MixtureSampler) reads the sources in random order.
/// Over an epoch each source's share of the samples is its probability, within the bounds of
/// a binomial draw, as with MixtureSampler.
///
/// Resuming: Loader::state_dict() / load_state_dict() resume any mixture on the same world
/// size. A job state (elastic.h) resumes a kFirstExhausted mixture on another world size: the
/// samples of each source not yet delivered are mixed again over the new ranks, with the same
/// weights, until a source runs out. kCycle and kAllExhausted repeat samples within an epoch,
/// which a job state cannot record: they are refused there, with that reason.
#pragma once

#include <mploader/compose.h>
#include <mploader/mixture_end.h>
#include <mploader/streaming.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mploader {

/// What a StreamMixture draws. Plain struct, checked by the StreamMixture's constructor.
struct StreamMixtureOptions {
  /// One weight per source, >= 0, at least one positive: source k is drawn with probability
  /// weights[k] / sum(weights).
  std::vector<double> weights;
  /// When a worker's stream ends; kCycle and kAllExhausted start a source's run again when it
  /// runs out.
  MixtureEnd end = MixtureEnd::kCycle;
  /// Draws per epoch over all ranks and workers, at most 10^9. kCycle: 0 means the sources'
  /// total size. kFirstExhausted and kAllExhausted: an upper bound, 0 for none.
  int64_t num_samples = 0;
  /// As ConcatDataset's: the name of an int64 tensor holding each sample's source position;
  /// "" for none.
  std::string source_field;
};

/// Several StreamingDatasets mixed by weighted draws, each read shard by shard (see the file
/// comment). Its shards are the sources' shards, one source after another, and its global
/// indices those of a ConcatDataset of the sources, so a batch's indices name each sample's
/// source and shard (locate(), source_of()).
///
/// Thread-safety: as its sources (each worker process has its own copy). Errors: the
/// constructor throws OptionError naming the option and the fix: no sources or a null one;
/// not one weight per source; a negative, NaN or infinite weight, or all zero; a positive weight
/// on a source with no samples; num_samples < 0; an epoch over 10^9 draws.
class StreamMixture : public StreamingDataset {
 public:
  /// See the class comment.
  StreamMixture(std::vector<std::shared_ptr<StreamingDataset>> sources,
                StreamMixtureOptions options);

  /// Sample `index` of its source (plus the source field).
  Sample get(int64_t index) override;
  /// The sources' common layout (ConcatDataset::sample_layout()).
  std::optional<SampleLayout> sample_layout() const override;
  void write(int64_t index, SampleWriter& out) override;  ///< Through the source's write().
  /// Through the source's write_batch() when all indices are in one source, row by row else.
  void write_batch(const int64_t* indices, size_t count, BatchWriter& out) override;
  /// "mploader.stream_mixture": the sources' recipes and the options; nullopt when a source has
  /// none (spawn and forkserver then refuse the Loader, naming it).
  std::optional<DatasetRecipe> recipe() const override;
  /// The first source's warning, naming it; empty if none has one.
  std::string shuffle_buffer_warning(int64_t shuffle_buffer) const override;
  /// Passes each source the shards of its own, in its numbering.
  void prefetch_shards(const std::vector<size_t>& shards) override;
  /// The sources' shard counts, probabilities, end and num_samples.
  const StreamMixSpec* stream_mix() const override { return &spec_; }

  /// The source of global index `index` (in [0, size())).
  size_t source_of(int64_t index) const { return concat_.locate(index).source; }
  /// The sources, in order.
  const std::vector<std::shared_ptr<StreamingDataset>>& sources() const { return sources_; }
  /// The options, as given.
  const StreamMixtureOptions& options() const { return options_; }

 private:
  std::vector<std::shared_ptr<StreamingDataset>> sources_;
  StreamMixtureOptions options_;
  StreamMixSpec spec_;
  ConcatDataset concat_;
  std::vector<size_t> first_shard_;  // per source, its first shard in shards()
};

}  // namespace mploader
