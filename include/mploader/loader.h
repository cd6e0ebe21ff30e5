// Loader: iterates a Dataset in batches built by worker processes and handed over through
// shared-memory rings.
//
//   mploader::Loader loader(dataset, options);
//   for (int epoch = 0; epoch < 3; ++epoch) {
//     loader.set_epoch(epoch);
//     for (mploader::Batch& b : loader) { at::Tensor x = b["image"]; ... }
//   }
//
// A Loader is used from one thread at a time. Batches it returns may outlive it.
#pragma once

#include <mploader/batch.h>
#include <mploader/dataset.h>
#include <mploader/options.h>
#include <mploader/stats.h>

#include <memory>
#include <optional>
#include <vector>

namespace mploader {

namespace detail {
class LoaderCore;
}

class Loader {
 public:
  class Iterator;
  struct Sentinel {};

  // Validates options (OptionError), sizes and creates the rings (ShmError) and starts the
  // workers. Throws before any worker runs if anything is wrong.
  Loader(std::shared_ptr<Dataset> dataset, LoaderOptions options);
  // Stops the workers (they exit; none is left as a zombie) and releases the rings once no
  // Batch uses them any more.
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // The epoch the next iteration runs; it seeds shuffling. Without a call, each new iteration
  // takes the epoch after the last one (the first is 0).
  void set_epoch(uint64_t epoch);
  // The epoch of the current (or last) iteration.
  uint64_t epoch() const;
  // Batches the next epoch will have.
  size_t batches_per_epoch() const;

  // Starts a new epoch (abandoning what is left of the current one) and returns its first
  // batch.
  Iterator begin();
  Sentinel end() { return {}; }
  // The next batch of the current epoch, starting one if none is running; nullopt once the
  // epoch is complete. Throws WorkerError, WorkerCrashed, TimeoutError or BatchTooLarge.
  std::optional<Batch> next();

  const LoaderOptions& options() const;
  // Process ids of the live workers (empty when num_workers == 0).
  std::vector<int> worker_pids() const;
  // Counters of where time went so far (stats.h): per-worker busy time, the caller's wait.
  LoaderStats stats() const;

 private:
  std::unique_ptr<detail::LoaderCore> core_;
};

class Loader::Iterator {
 public:
  Batch& operator*() { return *current_; }
  Batch* operator->() { return &*current_; }
  Iterator& operator++() {
    current_.reset();  // let the slot go back to its worker before waiting for the next batch
    current_ = loader_->next();
    return *this;
  }
  bool operator!=(Sentinel) const { return current_.has_value(); }
  bool operator==(Sentinel) const { return !current_.has_value(); }

 private:
  friend class Loader;
  Iterator(Loader* loader, std::optional<Batch> first)
      : loader_(loader), current_(std::move(first)) {}
  Loader* loader_;
  std::optional<Batch> current_;
};

}  // namespace mploader
