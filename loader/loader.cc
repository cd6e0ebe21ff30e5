// Loader: the public entry point. Its options are checked and kept here; EpochState plans the
// epochs and keeps what state_dict() saves, WorkerRuntime produces the batches.
#include <mploader/loader.h>

#include <mploader/elastic_sampler.h>

#include "loader/component_settings.h"
#include "loader/epoch_state.h"
#include "loader/options_check.h"
#include "loader/resume_state.h"
#include "loader/worker_runtime.h"

namespace mploader {
namespace detail {

// The sampler whose order the epoch's batches follow, when it can resume on another world
// size: the batch sampler itself, or the sampler that the Loader's own FixedSizeBatchSampler
// cuts.
const ElasticSampler* elastic_sampler_of(const LoaderOptions& o) {
  if (auto* e = dynamic_cast<const ElasticSampler*>(o.batch_sampler.get())) return e;
  if (dynamic_cast<const FixedSizeBatchSampler*>(o.batch_sampler.get()) != nullptr) {
    return dynamic_cast<const ElasticSampler*>(o.sampler.get());
  }
  return nullptr;
}

// A Loader's parts, and the order in which an iteration uses them. Used by one thread.
class LoaderCore {
 public:
  LoaderCore(std::shared_ptr<Dataset> dataset, LoaderOptions options)
      : options_(checked_options(dataset.get(), std::move(options))),
        dataset_(std::move(dataset)),
        quarantine_(std::make_shared<Quarantine>(quarantine_settings(options_))),
        epochs_(options_.batch_sampler, *dataset_, recorded_settings(options_), quarantine_,
                std::dynamic_pointer_cast<StreamSampler>(options_.batch_sampler),
                elastic_sampler_of(options_)),
        runtime_(*dataset_, options_, quarantine_) {}

  const LoaderOptions& options() const { return options_; }
  const Dataset& dataset() const { return *dataset_; }
  EpochState& epochs() { return epochs_; }
  const EpochState& epochs() const { return epochs_; }
  const WorkerRuntime& runtime() const { return runtime_; }

  // Starts the upcoming epoch, abandoning the running one.
  void start_epoch() {
    if (std::optional<int64_t> split = runtime_.next_stream_split()) {
      epochs_.set_fresh_streams(*split);
    }
    runtime_.start_epoch(epochs_.plan_upcoming());
    epochs_.started();
  }

  std::optional<Batch> next() {
    if (epochs_.take_refusal()) return std::nullopt;  // the epoch whose plan was refused
    if (!epochs_.running()) start_epoch();
    std::optional<Batch> batch = runtime_.next();
    if (batch) {
      epochs_.received(*batch);
    } else {
      epochs_.finished();
    }
    return batch;
  }

 private:
  LoaderOptions options_;
  std::shared_ptr<Dataset> dataset_;
  std::shared_ptr<Quarantine> quarantine_;  // deaths in workers add, state_dict() saves
  EpochState epochs_;
  WorkerRuntime runtime_;  // last: its workers stop before the rest goes
};

}  // namespace detail

Loader::Loader(std::shared_ptr<Dataset> dataset, LoaderOptions options)
    : core_(std::make_unique<detail::LoaderCore>(std::move(dataset), std::move(options))) {}

Loader::~Loader() = default;

void Loader::set_epoch(uint64_t epoch) { core_->epochs().request(epoch); }

uint64_t Loader::epoch() const { return core_->epochs().epoch(); }

size_t Loader::batches_per_epoch() const { return core_->epochs().upcoming_batches(); }

std::string Loader::state_dict() const { return detail::to_text(core_->epochs().state()); }

std::string Loader::state_dict_without(const Batch& ahead) const {
  return detail::to_text(core_->epochs().state_without(ahead));
}

void Loader::load_state_dict(const std::string& state) { core_->epochs().load(state); }

Loader::Iterator Loader::begin() {
  core_->start_epoch();
  return Iterator(this, next());
}

std::optional<Batch> Loader::next() { return core_->next(); }

RankAgreement Loader::rank_agreement() const {
  const LoaderOptions& o = core_->options();
  RankAgreement a;
  a.rank = o.rank;
  a.world_size = o.world_size;
  a.dataset_size = static_cast<int64_t>(core_->dataset().size());
  a.fingerprint = detail::options_fingerprint(o, core_->dataset());
  a.seed = o.seed;
  a.epoch = core_->epochs().upcoming_epoch();
  a.batches = static_cast<int64_t>(core_->epochs().upcoming_batches());
  return a;
}

const LoaderOptions& Loader::options() const { return core_->options(); }

LoaderStats Loader::stats() const { return core_->runtime().stats(); }

std::vector<int> Loader::worker_pids() const { return core_->runtime().worker_pids(); }

}  // namespace mploader
