/// @file
/// worker_info(): which worker process the calling code runs in. Dataset code uses it to open
/// per-worker resources or to shard work; it is empty in the main process.
#pragma once

#include <cstdint>
#include <optional>

namespace mploader {

/// Facts about the worker process the calling code runs in.
struct WorkerInfo {
  int id = 0;           ///< 0 .. num_workers - 1
  int num_workers = 0;  ///< LoaderOptions::num_workers
  int pid = 0;          ///< This worker's process id.
  /// This worker's seed for the current epoch, from (LoaderOptions::seed, epoch, id): distinct
  /// per worker and per epoch, the same in every run. libtorch's default generator and
  /// std::rand are seeded with it when the worker starts an epoch; seed your own generators
  /// from it too.
  uint64_t seed = 0;
  uint64_t epoch = 0;   ///< The epoch the worker is loading.
  int64_t rank = 0;     ///< LoaderOptions::rank, for distributed jobs
  /// Ranks in the job (LoaderOptions::world_size, or the launcher's); 0 when the Loader was
  /// given a rank but no world size.
  int64_t world_size = 1;
};

/// The seed a worker gets for an epoch (splitmix64 over the three values).
uint64_t worker_seed(uint64_t seed, uint64_t epoch, int worker_id);

/// The calling process's worker, or nullopt in the main process (and with num_workers == 0).
std::optional<WorkerInfo> worker_info();

/// What a Loader is loading while it calls the dataset, for randomness that belongs to the
/// sample rather than to the worker that loads it (see sample_seed()).
struct LoadingContext {
  uint64_t seed = 0;   ///< LoaderOptions::seed
  uint64_t epoch = 0;  ///< The epoch of the batch being built.
};

/// The loading context of the calling code: set in worker processes, and in the training
/// process while a Loader with num_workers = 0 builds a batch; nullopt elsewhere (a dataset used
/// on its own, libtorch's loader).
std::optional<LoadingContext> loading_context();

/// The seed of sample `index`'s random choices in `epoch` of a Loader seeded `seed`
/// (splitmix64 over the three): it depends on the sample alone, so a random crop is the same
/// with any number of workers, any start method, and after a resume.
uint64_t sample_seed(uint64_t seed, uint64_t epoch, int64_t index);

}  // namespace mploader
