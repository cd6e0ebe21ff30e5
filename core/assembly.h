// core/: the Dataset contract, tensors, collation, batch planning and assembly, on either
// side of the fork.
//
// Batch assembly: a batch's indices in, one collated batch out, written into memory its sink
// provides. The one path for workers (a ring slot or an overflow segment) and for
// num_workers = 0 (pooled memory in the training process), so that code, results and error
// texts do not change with num_workers. Failures come back as a value: a worker copies it into
// its task descriptor, and the main process turns it into the one WorkerError text
// (batch_error). The probe that sizes the ring slots runs here too.
//
// A dataset that declares its sample layout writes its samples straight into the sink's
// memory, between open() and the end of the batch: each byte once.
#pragma once

#include "core/batch_plan.h"
#include "ipc/region_layout.h"

#include <mploader/collate.h>
#include <mploader/dataset.h>
#include <mploader/errors.h>

#include <cstdint>
#include <string>
#include <vector>

namespace mploader::detail {

// Which Dataset function a kDatasetError came from.
enum class DatasetCall : uint32_t {
  kGet = 0,
  kWrite = 1,         // in place, one sample
  kWriteBatch = 2,    // in place, the dataset's own write_batch (no one sample at fault)
  kSampleLayout = 3,  // the layout it declares (or its call threw)
  kPrepareBatch = 4,  // its prepare_batch(), before any sample of the batch
};

// Why a batch was not made, with the evidence. status kOk: it was.
struct BatchFailure {
  ipc::TaskStatus status = ipc::TaskStatus::kOk;
  int64_t sample_index = -1;  // the dataset index at fault, -1 when none is
  std::string type;           // the exception's type; "layout" for a tensor-table limit
  std::string message;
  DatasetCall call = DatasetCall::kGet;  // kDatasetError: which function
  bool ok() const { return status == ipc::TaskStatus::kOk; }
};

// A worker's outcome into its task descriptor, and back in the main process once the
// descriptor's id is published.
void write_failure(const BatchFailure& failure, ipc::TaskDescriptor& d);
BatchFailure read_failure(const ipc::TaskDescriptor& d);

// Where a batch is written and who watches it being made. Used by one thread.
class BatchSink {
 public:
  virtual ~BatchSink() = default;
  // Before Dataset::get(index) (or write(index), or write_batch of a batch beginning with
  // index, as `phase` says). False: the batch is no longer wanted (kCancelled).
  virtual bool begin_sample(int64_t index, ipc::WorkerPhase phase) = 0;
  // Before a collator step runs on the sample of dataset index `index` (-1: the whole batch).
  virtual void begin_collate(int64_t index) = 0;
  // The layout is planned: memory for plan.total_bytes (at least one byte) to write into,
  // aligned to ipc::kPayloadAlign; or why there is none (the batch is too large, a syscall
  // failed).
  virtual BatchFailure open(const PlannedBatch& plan, uint8_t*& base) = 0;
};

// Loads the samples of `indices` and collates them into the sink's memory; `plan` then says
// where each tensor lies. A dataset with a sample_layout() whose collator stacks
// (Collator::layout_for_rows) writes the samples straight into that memory
// (Dataset::write_batch); otherwise a collator that streams gets each sample as it is loaded
// (one sample held, not a batch), and any other the whole batch of samples.
[[nodiscard]] BatchFailure assemble_batch(Dataset& dataset, Collator& collator,
                                          const int64_t* indices, size_t count, BatchSink& sink,
                                          PlannedBatch& plan);

// The slot probe: the bytes a batch of `batch_size` needs: from the dataset's sample_layout()
// when it writes in place (no sample is read), else from sample indices[0] when the collator
// can estimate, else from the whole of `indices` scaled up; `plan` is the layout of
// the samples read (its limits are checked). Writes no payload: open() is not called.
[[nodiscard]] BatchFailure probe_batch(Dataset& dataset, Collator& collator,
                                       const int64_t* indices, size_t count, size_t batch_size,
                                       BatchSink& sink, PlannedBatch& plan, uint64_t& batch_bytes);

// Where a failed batch was and what happens next, for its message.
struct FailurePlace {
  std::string who;          // "mploader: worker 1 (pid 4242)"; "mploader" in the training process
  std::string batch;        // "batch 3 of epoch 0, indices 1, 2 (2 in all)"
  std::string consequence;  // "The batch is skipped; ..."
  int worker_id = -1;       // WorkerError::worker_id(); -1 in the training process
};

// What follows a failed batch's message on the epoch's path.
constexpr const char* kBatchSkipped =
    "The batch is skipped; catch the exception to go on with the next batch.";

// "batch 3 of epoch 0, indices 1, 2 (2 in all)", for FailurePlace::batch.
std::string batch_place(uint64_t sequence, uint64_t epoch, const std::vector<int64_t>& indices);

// The one text of a batch whose Dataset::get or collator failed (kDatasetError,
// kCollateError), wherever it ran.
WorkerError batch_error(const BatchFailure& failure, const FailurePlace& place);

// A hint for an exception text that looks like CUDA failing in a forked worker; empty for any
// other text.
std::string cuda_in_worker_hint(const std::string& exception_text);

}  // namespace mploader::detail
