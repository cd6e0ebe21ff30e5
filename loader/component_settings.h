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
// The pool of options.num_workers workers, with worker_settings(); its slot_bytes is left for
// probe_slot_bytes() to fill in.
PoolConfig pool_config(const LoaderOptions& options, const Dataset& dataset);
DispatcherSettings dispatcher_settings(const LoaderOptions& options);
SupervisorSettings supervisor_settings(const LoaderOptions& options);
QuarantineSettings quarantine_settings(const LoaderOptions& options);
RecordedSettings recorded_settings(const LoaderOptions& options);
// Of the options that shape an epoch's batches (and of a StreamingDataset's shards), for
// Loader::rank_agreement(): ranks that differ in any of them are told so.
uint64_t options_fingerprint(const LoaderOptions& options, const Dataset& dataset);

}  // namespace mploader::detail
