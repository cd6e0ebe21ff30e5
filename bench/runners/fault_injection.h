// --inject-fault: a Dataset wrapper that makes one mploader worker process fail for real
// (a segfault, a bus error, OOM, a hang, ...), to see what the loader and its crash reports
// make of it. Faults fire only in worker processes, never in the main process.
#pragma once

#include <mploader/dataset.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace bench {

// The names --inject-fault accepts: segv bus fpe abort oom kill exit exception hang.
const std::vector<std::string>& fault_names();

struct FaultSpec {
  std::string kind;       // one of fault_names()
  int64_t at_batch = 3;   // --fault-at-batch
  int64_t worker = 0;     // --fault-worker
  int64_t batch_size = 1;
  std::string shm_dir;    // where `bus` maps its file; empty: /dev/shm
};

// Wraps `inner`. In the worker whose worker_info()->id == spec.worker, the first sample of the
// first batch numbered at_batch or later that this worker loads (with sequential order, index
// at_batch * batch_size when the batch goes to it) fails in the way `kind` names. It fires once
// per run: a worker started to replace a dead one does not fire again, so that
// --max-restarts can carry the run through.
std::shared_ptr<mploader::Dataset> inject_fault(std::shared_ptr<mploader::Dataset> inner,
                                                const FaultSpec& spec);

}  // namespace bench
