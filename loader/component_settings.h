// LoaderOptions translated, in one place, into the settings each component of a Loader reads:
// what every worker is told, how the pool is laid out, what the dispatcher and the supervisor
// need, what a saved state records. No component below loader/ sees the options whole.
#pragma once

#include "loader/dispatcher.h"
#include "loader/resume_state.h"
#include "process/worker_pool.h"
#include "supervise/supervisor.h"
#include "worker/worker_spec.h"

#include <mploader/dataset.h>
#include <mploader/options.h>

namespace mploader::detail {

// What every worker of the loader is told alike, from checked options (options_check.h). The
// recipes are filled in only for the start methods that rebuild dataset and collator.
worker::WorkerSettings worker_settings(const LoaderOptions& options, const Dataset& dataset);
// With prefetch_factor = kAuto: where it starts, and the most it rises to (the descriptors
// and slots each region has).
inline constexpr int64_t kAutoPrefetchStart = 2;
inline constexpr int64_t kAutoPrefetchMost = 4;
// With num_workers = kAuto, the most worker slots a pool has: every slot's ring and
// descriptors are made at start, and workers that wait on I/O rarely gain past this many.
inline constexpr int64_t kMostAutoWorkers = 128;
int64_t starting_prefetch(const LoaderOptions& options);
int64_t most_prefetch(const LoaderOptions& options);
// With kAuto, the worker slots before shared memory and memory cap them (shm_budget.h):
// kMostAutoWorkers, or fewer where the RLIMIT_NOFILE soft limit has descriptors for fewer
// (raising it past 1024 would break a program that uses select()), and why.
struct AutoWorkerSlots {
  int64_t count = 0;
  std::string reason;
};
AutoWorkerSlots auto_worker_slots();
// The worker slots a pool has before shared memory caps them: num_workers, or with kAuto
// auto_worker_slots(), never under the workers that start.
int64_t worker_slots(const LoaderOptions& options, int64_t cpu_budget);
// The workers that run first: num_workers, or with kAuto one per CPU of the budget.
int64_t starting_workers(const LoaderOptions& options, int64_t cpu_budget);
// A StreamingDataset's split per rank when planned afresh: the starting workers.
int64_t stream_split(const LoaderOptions& options);
// The pool of worker_slots(), of which starting_workers() run, with worker_settings(); its
// slot_bytes is left for probe_slot_bytes() to fill in, and with kAuto fit_workers_to_shm()
// may lower its slots.
PoolConfig pool_config(const LoaderOptions& options, const Dataset& dataset);
DispatcherSettings dispatcher_settings(const LoaderOptions& options);
SupervisorSettings supervisor_settings(const LoaderOptions& options);
QuarantineSettings quarantine_settings(const LoaderOptions& options);
RecordedSettings recorded_settings(const LoaderOptions& options);
// Of the options that shape an epoch's batches (and of a StreamingDataset's shards), for
// Loader::rank_agreement(): ranks that differ in any of them are told so.
uint64_t options_fingerprint(const LoaderOptions& options, const Dataset& dataset);

}  // namespace mploader::detail
