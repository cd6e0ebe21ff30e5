// InProcessSource: num_workers == 0. Loads and collates in the calling thread with the same
// collators and the same Batch layout as the workers, so code and results do not change with
// num_workers.
#pragma once

#include "loader/batch_source.h"
#include "loader/skip_ledger.h"

#include <mploader/collate.h>
#include <mploader/dataset.h>

#include <ATen/core/Tensor.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace mploader::detail {

// Memory for in-process batches, reused once the loop drops a batch. A batch of large samples
// is tens of MB, and a fresh allocation that large is a fresh mmap: every batch paid its page
// faults again. Safe for concurrent use: a batch is dropped on whatever thread the caller
// likes. Buffers that come back after the pool is gone are freed.
class BatchBufferPool : public std::enable_shared_from_this<BatchBufferPool> {
 public:
  // At least `bytes`; `base` is set to its start. Dropping the result gives it back.
  std::shared_ptr<void> take(uint64_t bytes, uint8_t*& base);

 private:
  void give_back(at::Tensor buffer);

  std::mutex mutex_;
  std::vector<at::Tensor> free_;
};

class InProcessSource : public BatchSource {
 public:
  // `skips` receives what the dataset reports skipped; `seed` is LoaderOptions::seed, for the
  // loading context the dataset sees (mploader::loading_context()).
  InProcessSource(Dataset& dataset, Collator& collator, std::shared_ptr<SkipLedger> skips,
                  uint64_t seed)
      : dataset_(dataset), collator_(collator), skips_(std::move(skips)), seed_(seed) {}
  // One stream of work here: the batches' streams do not matter.
  void start_epoch(std::shared_ptr<const BatchList> batches, uint64_t epoch) override;
  std::optional<Batch> next() override;

 private:
  Dataset& dataset_;
  Collator& collator_;
  std::shared_ptr<SkipLedger> skips_;
  uint64_t seed_;
  std::shared_ptr<BatchBufferPool> buffers_ = std::make_shared<BatchBufferPool>();
  std::shared_ptr<const BatchList> batches_;
  uint64_t epoch_ = 0;
  size_t position_ = 0;
};

}  // namespace mploader::detail
