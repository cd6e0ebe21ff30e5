/// @file
/// worker_info(): which worker process the calling code runs in. Dataset code uses it to open
/// per-worker resources or to shard work; it is empty in the main process. The seed and epoch
/// a sample is loaded for, in any process, are in mploader/loading_context.h.
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

}  // namespace mploader
