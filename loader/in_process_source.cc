#include "loader/in_process_source.h"

#include "core/assembly.h"
#include "core/batch_builder.h"

#include <mploader/errors.h>

#include <ATen/ATen.h>

#include <mutex>

namespace mploader::detail {

void InProcessSource::start_epoch(std::shared_ptr<const BatchList> batches, uint64_t epoch) {
  batches_ = std::move(batches);
  epoch_ = epoch;
  position_ = 0;
}

namespace {

// How many dropped batch buffers the pool keeps for reuse: the loop usually holds one batch
// while the next is built.
constexpr size_t kPooledBuffers = 2;

// Pooled memory for the batch; the training process's own progress needs no reporting.
class PooledSink : public BatchSink {
 public:
  explicit PooledSink(BatchBufferPool& buffers) : buffers_(buffers) {}
  bool begin_sample(int64_t, ipc::WorkerPhase) override { return true; }
  void begin_collate(int64_t) override {}
  BatchFailure open(const PlannedBatch& plan, uint8_t*& base) override {
    memory = buffers_.take(std::max<uint64_t>(plan.total_bytes, 1), base);
    return {};
  }
  std::shared_ptr<void> memory;

 private:
  BatchBufferPool& buffers_;
};

}  // namespace

std::shared_ptr<void> BatchBufferPool::take(uint64_t bytes, uint8_t*& base) {
  at::Tensor buffer;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < free_.size(); ++i) {
      if (free_[i].nbytes() >= bytes) {
        buffer = std::move(free_[i]);
        free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
    }
  }
  if (!buffer.defined()) buffer = at::empty({static_cast<int64_t>(bytes)}, at::kByte);
  base = buffer.data_ptr<uint8_t>();
  std::weak_ptr<BatchBufferPool> pool = shared_from_this();
  return std::shared_ptr<void>(base, [pool, buffer](void*) mutable {
    if (auto alive = pool.lock()) alive->give_back(std::move(buffer));
  });
}

void BatchBufferPool::give_back(at::Tensor buffer) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (free_.size() < kPooledBuffers) free_.push_back(std::move(buffer));
}

std::optional<Batch> InProcessSource::next() {
  std::vector<int64_t> indices;
  uint64_t position = 0;
  do {  // a batch whose samples were all quarantined is passed over
    if (!batches_ || position_ >= batches_->size()) return std::nullopt;
    position = position_++;
    indices = batches_->indices(position);
  } while (indices.empty());
  const uint64_t sequence = batches_->sequence(position);
  PooledSink sink(*buffers_);
  PlannedBatch plan;
  const ScopedLoadingScope scope(skips_.get(), LoadingContext{seed_, epoch_});
  const BatchFailure failure =
      assemble_batch(dataset_, collator_, indices.data(), indices.size(), sink, plan);
  if (!failure.ok()) {
    const std::string where = batch_place(sequence, epoch_, indices) + ", num_workers = 0";
    throw batch_error(failure, FailurePlace{"mploader", where, kBatchSkipped, -1});
  }
  uint8_t* base = static_cast<uint8_t*>(sink.memory.get());
  return BatchBuilder::from_plan(plan, base, std::move(sink.memory), std::move(indices), epoch_,
                                 sequence, -1);
}

}  // namespace mploader::detail
