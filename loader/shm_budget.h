// loader/: the Loader itself: options, epochs and resume, dispatching batches.
//
// The shared memory the rings may take: LoaderOptions::max_shm_bytes, the free space of
// shm_dir's file system, and half of the memory available and of what the memory cgroup has
// left (ring pages count against it, and the workers need the rest). With num_workers = kAuto
// it caps the worker slots; with a fixed count, rings that do not fit are refused before any
// is made.
//
// Pure functions of the options and the machine; no shared state.
#pragma once

#include "process/worker_pool.h"

#include <mploader/options.h>

#include <cstdint>
#include <optional>
#include <string>

namespace mploader::detail {

struct ShmBudget {
  uint64_t bytes = 0;
  std::string source;  // "max_shm_bytes", "the free space of '/dev/shm'", ...
};

// The tightest of the limits that apply; nullopt when none does (memfd rings, no cgroup
// limit, no max_shm_bytes). With a fixed num_workers, max_shm_bytes alone.
std::optional<ShmBudget> shm_budget(const LoaderOptions& options);

// Fits `config`'s worker slots to `budget`: with kAuto lowers worker_slots (and
// workers_running) to what fits and returns why, or "" when nothing was lowered; with a fixed
// count throws OptionError (max_shm_bytes) or ShmError when the rings do not fit.
std::string fit_workers_to_shm(PoolConfig& config, const LoaderOptions& options,
                               const std::optional<ShmBudget>& budget);

}  // namespace mploader::detail
