/// @file
/// Loader: iterates a Dataset in batches built by worker processes and handed over through
/// shared-memory rings.
///
///   mploader::Loader loader(dataset, options);
///   for (int epoch = 0; epoch < 3; ++epoch) {
///     loader.set_epoch(epoch);
///     for (mploader::Batch& b : loader) { at::Tensor x = b["image"]; ... }
///   }
///
/// A Loader is used from one thread at a time. Batches it returns may outlive it.
#pragma once

#include <mploader/batch.h>
#include <mploader/dataset.h>
#include <mploader/options.h>
#include <mploader/rank_agreement.h>
#include <mploader/stats.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mploader {

namespace detail {
class LoaderCore;
}

/// Iterates a Dataset in batches that worker processes (or, with num_workers == 0, the calling
/// thread) build straight into shared-memory ring slots; each Batch views its slot, no copy.
///
/// Thread-safety: one thread at a time uses a Loader (not necessarily the one that built it).
/// Ownership: the Loader owns its workers and rings; a Batch (and every tensor taken from it)
/// keeps its slot alive, so batches may outlive the Loader. Errors: OptionError and ShmError at
/// construction; WorkerError, WorkerCrashed, TimeoutError, BatchTooLarge and OptionError (an
/// invalid batch plan) while iterating.
class Loader {
 public:
  class Iterator;
  struct Sentinel {};  ///< end() of a range-for loop over the Loader.

  /// Validates options (OptionError), sizes and creates the rings (ShmError) and starts the
  /// workers. Throws before any worker runs if anything is wrong.
  Loader(std::shared_ptr<Dataset> dataset, LoaderOptions options);
  /// Stops the workers (they exit; none is left as a zombie) and releases the rings once no
  /// Batch uses them any more.
  ~Loader();
  Loader(const Loader&) = delete;             ///< Not copyable: it owns processes and rings.
  Loader& operator=(const Loader&) = delete;  ///< Not copyable.

  /// The epoch the next iteration runs; it seeds shuffling. Without a call, each new iteration
  /// takes the epoch after the last one (the first is 0).
  void set_epoch(uint64_t epoch);
  /// The epoch of the current (or last) iteration.
  uint64_t epoch() const;
  /// Batches the next epoch will have.
  size_t batches_per_epoch() const;

  /// Starts a new epoch (abandoning what is left of the current one) and returns its first
  /// batch.
  Iterator begin();
  Sentinel end() { return {}; }  ///< Where begin()'s iterator stops: the end of the epoch.
  /// The next batch of the current epoch, starting one if none is running; nullopt once the
  /// epoch is complete. Throws WorkerError, WorkerCrashed, TimeoutError or BatchTooLarge, and
  /// OptionError when the sampler's plan for the epoch it starts is invalid (an index out of
  /// range, an empty or too long batch): that epoch then ends with this one error, and the
  /// following call returns nullopt. begin() throws that OptionError too.
  std::optional<Batch> next();

  /// Resuming after a restart of the program. state_dict() says which epoch runs and which of
  /// its batches the loop has received (a batch counts once next() or the iterator returned
  /// it; one that raised does not). Call it from the loop's thread between batches, typically
  /// after the training step on the current batch and next to a model checkpoint; it is a
  /// versioned JSON text to store as it is. Batches prefetched but not yet received are not in
  /// it: a resume issues them again.
  std::string state_dict() const;
  /// state_dict() with `ahead` counted as not received: for code that takes batches from
  /// next() ahead of the training loop (a prefetcher, such as DevicePrefetcher) and saves the
  /// state while `ahead` has not reached the loop, so that a resume issues it again. A batch
  /// of another epoch than the state's changes nothing.
  std::string state_dict_without(const Batch& ahead) const;
  /// Makes the next iteration (begin() or next()) run the state's epoch with only the batches
  /// not yet received, in their order (in_order) and with their original Batch::sequence();
  /// epoch() returns the state's epoch at once. An epoch in progress is abandoned. The Loader
  /// must have the dataset and the options the state was taken with (num_workers,
  /// persistent_workers, in_order and start_method may differ): the epoch's batch plan is
  /// recomputed and checked against a fingerprint. set_epoch() with another epoch before the
  /// next iteration discards the loaded state. Throws OptionError("state") naming the field
  /// and the fix for a corrupt, truncated or altered text, another version, or a rank's own
  /// state from another dataset size, batch_size, drop_last, shuffle, seed or sampler. A job
  /// state (merge_loader_states(), elastic.h) plans the rest of its epoch anew, so it also
  /// resumes with another batch_size, drop_last or world size; it is refused for other data,
  /// another seed or shuffle, or other sampler options. Do not combine with a sampler's own
  /// load_state_dict (DistributedBucketSampler): use one or the other.
  void load_state_dict(const std::string& state);

  /// What every rank must agree on before the next epoch: pass it to verify_ranks_agree()
  /// (distributed.h) over the job's process group before each epoch, so that ranks built with
  /// different data or options fail alike with an error naming the difference, instead of
  /// one rank running out of batches and the others waiting for it forever. It holds rank and
  /// world size, the dataset's size, a fingerprint of the batching options (and of a
  /// StreamingDataset's shards), the seed, the upcoming epoch and its number of batches.
  RankAgreement rank_agreement() const;

  const LoaderOptions& options() const;
  /// Process ids of the live workers, by worker id (empty when num_workers == 0); 0 for a
  /// slot the autotuner left without a process (num_workers = kAuto).
  std::vector<int> worker_pids() const;
  /// Counters of where time went so far (stats.h): per-worker busy time, the caller's wait.
  LoaderStats stats() const;

 private:
  std::unique_ptr<detail::LoaderCore> core_;
};

/// Input iterator over one epoch of a Loader, from Loader::begin(). Advancing it releases the
/// current batch (unless the loop kept a copy) before it waits for the next one; it throws
/// what Loader::next() throws.
class Loader::Iterator {
 public:
  Batch& operator*() { return *current_; }    ///< The current batch.
  Batch* operator->() { return &*current_; }  ///< The current batch.
  /// Moves to the next batch of the epoch (Loader::next()).
  Iterator& operator++() {
    current_.reset();  // let the slot go back to its worker before waiting for the next batch
    current_ = loader_->next();
    return *this;
  }
  bool operator!=(Sentinel) const { return current_.has_value(); }   ///< Not at the end yet.
  bool operator==(Sentinel) const { return !current_.has_value(); }  ///< The epoch is over.

 private:
  friend class Loader;
  Iterator(Loader* loader, std::optional<Batch> first)
      : loader_(loader), current_(std::move(first)) {}
  Loader* loader_;
  std::optional<Batch> current_;
};

/// @fn const LoaderOptions& Loader::options() const
/// The options the Loader was built with, after validation.

}  // namespace mploader
