#include "loader/component_settings.h"
#include "core/recipes.h"
#include "sampler/stream_mix_plan.h"
#include "supervise/preflight.h"
#include "util/cpu_budget.h"
#include "util/errors.h"
#include "util/fnv1a.h"

#include <sys/resource.h>

#include <algorithm>
#include <filesystem>

#include <mploader/errors.h>
#include <mploader/streaming.h>

namespace mploader::detail {
namespace {

// The dataset's recipe in shared memory that every spawned worker maps: one copy however many
// workers start or restart, where each used to read its own.
SharedRecipe spawn_recipe(const Dataset& dataset) {
  auto recipe = shared_recipe_of(dataset);
  if (!recipe.ok()) {
    throw Error(message("start_method", "the dataset's recipe for spawned workers could not be "
                                        "put in shared memory: " + recipe.error().describe(),
                        "Free memory, or use start_method fork, which needs no recipe"));
  }
  return std::move(*recipe.value());  // the checks made sure there is one
}

}  // namespace

worker::WorkerSettings worker_settings(const LoaderOptions& options, const Dataset& dataset) {
  worker::WorkerSettings s;
  s.seed = options.seed;
  s.rank = options.rank;
  s.world_size = options.world_size;
  s.allow_overflow = options.allow_overflow;
  if (options.start_method != StartMethod::kFork) {  // the checks made sure the recipes exist
    SharedRecipe recipe = spawn_recipe(dataset);
    s.dataset_factory = std::move(recipe.factory);
    s.dataset_config = std::move(recipe.config);
    s.dataset_fds = std::move(recipe.descriptors);
    s.collator_recipe = *options.collate->recipe();
  }
  return s;
}

int64_t starting_prefetch(const LoaderOptions& options) {
  return options.prefetch_factor == kAuto ? kAutoPrefetchStart : options.prefetch_factor;
}

int64_t most_prefetch(const LoaderOptions& options) {
  return options.prefetch_factor == kAuto ? kAutoPrefetchMost : options.prefetch_factor;
}

AutoWorkerSlots auto_worker_slots() {
  AutoWorkerSlots slots{kMostAutoWorkers, "the most mploader makes room for, a ring and " +
                                              std::to_string(kFdsPerWorker) +
                                              " descriptors each at start"};
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return slots;
  int64_t open_fds = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    (void)entry;
    ++open_fds;
  }
  const auto soft = static_cast<int64_t>(limit.rlim_cur);
  const int64_t fit = (soft - open_fds - kFdsPerLoader - kFdHeadroom) / kFdsPerWorker;
  if (fit < slots.count) {
    slots = {std::max<int64_t>(2, fit),
             "the RLIMIT_NOFILE soft limit of " + std::to_string(soft) + " descriptors, " +
                 std::to_string(open_fds) + " open, " + std::to_string(kFdsPerWorker) +
                 " per worker and " + std::to_string(kFdHeadroom) +
                 " left for the program; raise it (ulimit -n) for more"};
  }
  return slots;
}

int64_t worker_slots(const LoaderOptions& options, int64_t cpu_budget) {
  if (options.num_workers != kAuto) return options.num_workers;
  return std::max(auto_worker_slots().count, starting_workers(options, cpu_budget));
}

int64_t starting_workers(const LoaderOptions& options, int64_t cpu_budget) {
  if (options.num_workers != kAuto) return options.num_workers;
  return std::max<int64_t>(1, cpu_budget);
}

PoolConfig pool_config(const LoaderOptions& options, const Dataset& dataset) {
  const int64_t budget = cpu_budget().cpus();
  PoolConfig c;
  c.worker_slots = static_cast<int>(worker_slots(options, budget));
  c.workers_running = static_cast<int>(std::min<int64_t>(starting_workers(options, budget),
                                                         c.worker_slots));
  c.num_descriptors = static_cast<uint32_t>(most_prefetch(options));
  c.num_slots = static_cast<uint32_t>(most_prefetch(options)) + 1;
  c.max_indices = static_cast<uint32_t>(options.batch_sampler->max_batch_size());
  c.shm_dir = options.shm_dir;
  c.pin_memory = options.pin_memory;
  c.start_method = options.start_method;
  c.worker_settings = worker_settings(options, dataset);
  c.worker_init = options.worker_init;
  return c;
}

DispatcherSettings dispatcher_settings(const LoaderOptions& options) {
  DispatcherSettings s;
  s.in_order = options.in_order;
  s.timeout = options.timeout;
  s.max_restarts_per_epoch = options.max_restarts_per_epoch;
  s.max_batch_bytes = options.max_batch_bytes;
  return s;
}

SupervisorSettings supervisor_settings(const LoaderOptions& options) {
  SupervisorSettings s;
  s.crash_dir = options.crash_dir;
  s.timeout = options.timeout;
  s.reported = ReportedOptions{options.num_workers, options.batch_size, options.prefetch_factor,
                               options.shm_dir};
  s.persistent_workers = options.persistent_workers;
  return s;
}

QuarantineSettings quarantine_settings(const LoaderOptions& options) {
  return QuarantineSettings{options.quarantine_after, options.max_quarantined_per_epoch};
}

RecordedSettings recorded_settings(const LoaderOptions& options) {
  return RecordedSettings{options.batch_size, options.drop_last, options.shuffle,
                          options.seed,       options.in_order,  options.num_workers};
}

int64_t stream_split(const LoaderOptions& options) {
  return std::max<int64_t>(1, starting_workers(options, cpu_budget().cpus()));
}

uint64_t options_fingerprint(const LoaderOptions& o, const Dataset& dataset) {
  Fnv1a h;
  auto add = [&h](uint64_t v) { h.add(v); };
  add(static_cast<uint64_t>(o.batch_size));
  add(o.drop_last);
  add(o.shuffle);
  add(static_cast<uint64_t>(o.shuffle_buffer));
  add(static_cast<uint64_t>(o.uneven_ranks));
  if (auto* stream = dynamic_cast<const StreamingDataset*>(&dataset)) {
    add(stream->corpus_fingerprint());
    add(static_cast<uint64_t>(stream_split(o)));  // the split per rank
    if (const StreamMixSpec* mix = stream->stream_mix()) {  // other weights: another order
      add(stream_mix_fingerprint(*mix));
    }
  }
  return h.value();
}

}  // namespace mploader::detail
