// Sizing the ring slots without running dataset code in the training process.
//
// A slot must hold a whole batch, so its size comes from a real sample. Reading that sample
// in the main process would run Dataset::get there: a dataset that opens its file lazily would
// then hand the open descriptor, and its shared file offset, to every forked worker (silently
// wrong samples), and a crash in get() would kill the training process with no diagnosis.
// Instead a short-lived worker process, started like every other worker (same start method,
// same worker_init, same crash handlers and supervisor), reads sample 0 (or the first batch
// when the collator cannot estimate from one sample) and writes the estimate and the batch's
// tensor table back into its region. Its failures reach the caller as the same typed
// exceptions an epoch would raise: WorkerError, WorkerCrashed, TimeoutError.
#pragma once

#include "process/worker_pool.h"

#include <mploader/dataset.h>
#include <mploader/options.h>

#include <cstdint>

namespace mploader::detail {

// Bytes for one ring slot: max_batch_bytes when set; otherwise the probe's estimate for a
// batch of max_batch_size() with a quarter of headroom. `pool` is the configuration the real
// workers will get; the probe runs one worker of it with a one-task region.
uint64_t probe_slot_bytes(Dataset& dataset, const LoaderOptions& options,
                          const PoolConfig& pool);

}  // namespace mploader::detail
