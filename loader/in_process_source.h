// InProcessSource: num_workers == 0. Loads and collates in the calling thread with the same
// collators and the same Batch layout as the workers, so code and results do not change with
// num_workers.
#pragma once

#include "loader/batch_source.h"

#include <mploader/collate.h>
#include <mploader/dataset.h>

namespace mploader::detail {

class InProcessSource : public BatchSource {
 public:
  InProcessSource(Dataset& dataset, Collator& collator) : dataset_(dataset), collator_(collator) {}
  void start_epoch(std::vector<std::vector<int64_t>> batches, std::vector<uint64_t> sequences,
                   uint64_t epoch) override;
  std::optional<Batch> next() override;

 private:
  Dataset& dataset_;
  Collator& collator_;
  std::vector<std::vector<int64_t>> batches_;
  std::vector<uint64_t> sequences_;  // as in BatchSource::start_epoch
  uint64_t epoch_ = 0;
  size_t position_ = 0;
};

}  // namespace mploader::detail
