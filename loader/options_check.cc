#include "loader/options_check.h"

#include "core/recipes.h"
#include "datasets/compose_recipes.h"
#include "loader/component_settings.h"
#include "ipc/region_layout.h"
#include "sampler/epoch_limit.h"
#include "sampler/rank_check.h"
#include "sampler/stream_sampler.h"
#include "util/log.h"

#include <mploader/errors.h>
#include <mploader/launch_info.h>
#include <mploader/registry.h>
#include <mploader/streaming.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <typeinfo>
#include <string>

namespace mploader::detail {
namespace {

constexpr int64_t kMaxWorkers = 1024;

void require(bool ok, const char* option, const std::string& message) {
  if (!ok) throw OptionError(option, std::string("mploader: ") + message);
}

void check_shm_dir(const std::string& dir) {
  if (dir.empty()) return;
  struct stat st;
  require(stat(dir.c_str(), &st) == 0, "shm_dir",
          "shm_dir '" + dir + "' does not exist (" + std::strerror(errno) +
              "); create it, or leave shm_dir empty to use anonymous shared memory");
  require(S_ISDIR(st.st_mode), "shm_dir",
          "shm_dir '" + dir + "' is not a directory; give a directory on a tmpfs such as "
          "/dev/shm, or leave shm_dir empty");
  require(access(dir.c_str(), W_OK | X_OK) == 0, "shm_dir",
          "shm_dir '" + dir + "' is not writable by this process (" + std::strerror(errno) +
              "); fix its permissions or choose another directory");
}

void check_counts(const LoaderOptions& o) {
  require(o.num_workers >= 0 || o.num_workers == kAuto, "num_workers",
          "num_workers must be 0 (load in this process), more, or mploader::kAuto (chosen "
          "while it runs), got " + std::to_string(o.num_workers));
  require(o.num_workers <= kMaxWorkers, "num_workers",
          "num_workers " + std::to_string(o.num_workers) + " is more than " +
              std::to_string(kMaxWorkers) + "; use about as many workers as CPU cores");
  require(o.batch_sampler || o.batch_size >= 1, "batch_size",
          "batch_size must be at least 1, got " + std::to_string(o.batch_size));
  const int64_t max_prefetch = ipc::kMaxDescriptors - 1;
  require((o.prefetch_factor >= 1 && o.prefetch_factor <= max_prefetch) ||
              o.prefetch_factor == kAuto,
          "prefetch_factor",
          "prefetch_factor must be between 1 and " + std::to_string(max_prefetch) +
              ", or mploader::kAuto, got " + std::to_string(o.prefetch_factor) +
              "; 2 is a good start");
  require(o.max_restarts_per_epoch >= 0, "max_restarts_per_epoch",
          "max_restarts_per_epoch must be 0 (a dead worker ends the epoch with WorkerCrashed) or "
          "the number of dead workers to replace per epoch, got " +
              std::to_string(o.max_restarts_per_epoch) + "; 2 is a good value to survive rare deaths");
  require(o.timeout.count() >= 0, "timeout",
          "timeout must be 0 (wait forever) or positive, got " +
              std::to_string(o.timeout.count()) + " ms");
}

// Quarantine works through restarts: the deaths before a sample is quarantined are restarts,
// and only a worker process can die without taking the training process with it.
void check_quarantine(const LoaderOptions& o) {
  require(o.quarantine_after >= 0, "quarantine_after",
          "quarantine_after must be 0 (off) or the number of worker deaths on one sample that "
          "quarantine it, got " + std::to_string(o.quarantine_after) + "; 2 is a good value");
  if (o.quarantine_after == 0) return;
  require(o.num_workers != 0, "quarantine_after",
          "quarantine_after = " + std::to_string(o.quarantine_after) + " needs worker "
          "processes, but num_workers is 0: a crash in the training process cannot be "
          "survived. Set num_workers to 1 or more, or quarantine_after to 0");
  require(o.max_restarts_per_epoch > 0, "quarantine_after",
          "quarantine_after = " + std::to_string(o.quarantine_after) + " needs "
          "max_restarts_per_epoch >= 1, got " + std::to_string(o.max_restarts_per_epoch) +
              ": the deaths before a sample is quarantined are survived by restarting the "
              "worker (their restarts are given back once it is). Set max_restarts_per_epoch "
              "to 2 or more");
  require(o.max_quarantined_per_epoch >= 1, "max_quarantined_per_epoch",
          "max_quarantined_per_epoch must be 1 or more with quarantine_after = " +
              std::to_string(o.quarantine_after) + ", got " +
              std::to_string(o.max_quarantined_per_epoch) +
              "; it bounds how many samples one epoch may leave out (16 by default)");
}

std::string type_name(const Dataset& d) { return typeid(d).name(); }

// Everything spawn needs, so that nothing fails later inside a worker.
void check_spawn(const Dataset& dataset, const LoaderOptions& o) {
  require(initialized(), "start_method",
          "mploader: start_method spawn and forkserver run this program again; call "
          "mploader::init(argc, argv) first thing in main() (mploader/registry.h)");
  const std::optional<std::string> factory = recipe_factory_of(dataset);
  // A ConcatDataset or Subset has none when a source has none: name that source.
  const std::optional<std::string> gap = factory ? std::nullopt : composed_recipe_gap(dataset);
  require(factory.has_value(), "dataset",
          "mploader: start_method spawn rebuilds the dataset in each new worker, but this "
          "dataset (" + type_name(dataset) + ") has no recipe" + (gap ? " (" + *gap + ")" : "") +
          ". Override Dataset::recipe() to "
          "return {factory name, config} and register the factory with "
          "MPLOADER_REGISTER_DATASET(name, [](const std::string& config) {...}); or use "
          "start_method fork");
  const auto names = registered_datasets();
  std::string known;
  for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
  require(std::find(names.begin(), names.end(), *factory) != names.end(), "dataset",
          "mploader: the dataset's recipe names the factory '" + *factory +
              "', which is not registered (registered: " + (known.empty() ? "none" : known) +
              "); register it with MPLOADER_REGISTER_DATASET in a file linked into this "
              "program");
  require(o.collate->recipe().has_value(), "collate",
          "mploader: start_method spawn rebuilds the collator in each new worker; "
          "function_collate cannot be. Use stack_collate()/pad_collate(), a Collator whose "
          "recipe() names one registered with MPLOADER_REGISTER_COLLATOR, or start_method fork");
  require(!o.worker_init, "worker_init",
          "mploader: worker_init cannot cross into a spawned worker; open per-worker resources "
          "in the dataset factory, which runs in each spawned worker");
}

// world_size 0: both from the launcher's environment, unless a rank was given: then the world
// size stays unknown (0), which only a StreamingDataset cannot work with. Else rank must lie
// in [0, world_size).
void resolve_ranks(LoaderOptions& o, bool streaming) {
  if (o.world_size == 0) {
    require(o.rank >= 0, "rank", "rank must be 0 or more, got " + std::to_string(o.rank));
    require(o.rank == 0 || !streaming, "world_size",
            "rank is " + std::to_string(o.rank) + " but world_size is 0, and a "
            "StreamingDataset shares its shards out among all ranks: set world_size to the "
            "job's process count too, or leave both to the launcher's environment");
    if (o.rank != 0) return;  // a rank without a world: as given, for worker_info()
    const LaunchInfo launch = launch_info_from_env();
    o.world_size = launch.world_size;
    o.rank = launch.rank;
    return;
  }
  require(o.world_size >= 1, "world_size",
          "world_size must be 1 or more (0: from the launcher), got " +
              std::to_string(o.world_size));
  detail::check_rank("LoaderOptions", o.world_size, o.rank);
}

// A StreamingDataset plans its own epochs (sampler/stream_plan.h) through a StreamSampler.
void plan_stream(const StreamingDataset& dataset, LoaderOptions& o) {
  require(!o.sampler && !o.batch_sampler, o.sampler ? "sampler" : "batch_sampler",
          "a StreamingDataset plans its own order (shards to ranks and workers): leave sampler "
          "and batch_sampler unset, and use shuffle, seed, shuffle_buffer, batch_size and "
          "drop_last");
  require(o.shuffle_buffer >= 0, "shuffle_buffer",
          "shuffle_buffer must be 0 (read order) or more samples, got " +
              std::to_string(o.shuffle_buffer));
  if (const std::string warning = dataset.shuffle_buffer_warning(o.shuffle_buffer);
      !warning.empty()) {
    log().warn("{}", warning);
  }
  StreamPlanSettings s;
  s.batch_size = o.batch_size;
  s.drop_last = o.drop_last;
  s.shuffle = o.shuffle;
  s.seed = o.seed;
  s.shuffle_buffer = o.shuffle_buffer;
  s.world_size = o.world_size;
  s.rank = o.rank;
  s.streams = stream_split(o);
  s.uneven = o.uneven_ranks;
  o.batch_sampler = std::make_shared<StreamSampler>(dataset, s);
}

}  // namespace

LoaderOptions checked_options(const Dataset* dataset, LoaderOptions o) {
  require(dataset != nullptr, "dataset", "mploader::Loader needs a dataset, got a null pointer");
  check_counts(o);
  check_quarantine(o);
  check_shm_dir(o.shm_dir);
  auto* stream = dynamic_cast<const StreamingDataset*>(dataset);
  resolve_ranks(o, stream != nullptr);
  if (stream != nullptr) plan_stream(*stream, o);
  if (!o.collate) o.collate = stack_collate();
  if (!o.sampler) {
    o.sampler = o.shuffle ? std::shared_ptr<Sampler>(std::make_shared<RandomSampler>(o.seed))
                          : std::make_shared<SequentialSampler>();
  }
  if (!o.batch_sampler) {
    o.sampler->check_fits(dataset->size());  // weights or indices for another dataset
    check_dataset_epoch(*o.sampler, dataset->size());  // an epoch too long to hold
    o.batch_sampler = std::make_shared<FixedSizeBatchSampler>(
        o.sampler, static_cast<size_t>(o.batch_size), o.drop_last);
  }
  require(o.batch_sampler->max_batch_size() >= 1, "batch_sampler",
          "the batch sampler's max_batch_size() is 0; it must bound the batch length");
  if (o.start_method != StartMethod::kFork && o.num_workers != 0) check_spawn(*dataset, o);
  return o;
}

}  // namespace mploader::detail
