#include "loader/in_process_source.h"

#include "batch/batch_builder.h"
#include "loader/messages.h"
#include "util/units.h"
#include "batch/batch_plan.h"
#include "batch/exception_text.h"

#include <mploader/errors.h>

#include <ATen/ATen.h>

#include <mutex>

namespace mploader::detail {

void InProcessSource::start_epoch(std::vector<std::vector<int64_t>> batches,
                                  std::vector<uint64_t> sequences, uint64_t epoch) {
  batches_ = std::move(batches);
  sequences_ = std::move(sequences);
  epoch_ = epoch;
  position_ = 0;
}

namespace {

// How many dropped batch buffers the pool keeps for reuse: the loop usually holds one batch
// while the next is built.
constexpr size_t kPooledBuffers = 2;

// "batch 3 of epoch 0, indices [...], num_workers = 0", for error messages.
std::string batch_place(uint64_t sequence, uint64_t epoch, const std::vector<int64_t>& indices) {
  return "batch " + std::to_string(sequence) + " of epoch " + std::to_string(epoch) +
         ", indices " + index_list(indices) + ", num_workers = 0";
}

// Runs a collator step; a throw becomes the WorkerError a worker's collate error becomes, with
// a SampleError's rows named by their dataset indices.
template <typename Step>
void collate_step(Step&& step, const std::string& where, const std::vector<int64_t>& indices) {
  try {
    step();
  } catch (const SampleError& e) {
    const std::string type = worker::describe_current_exception().first;
    const std::string text = e.message_for(indices.data(), indices.size());
    throw WorkerError("mploader: collating " + where + " failed: " + type + ": " + text, -1,
                      e.row() < indices.size() ? indices[e.row()] : -1, type, text);
  } catch (...) {
    auto [type, text] = worker::describe_current_exception();
    throw WorkerError("mploader: collating " + where + " failed: " + type + ": " + text, -1, -1,
                      type, text);
  }
}

// Plans a batch from a layout; limits of the tensor table are typed "layout", as in workers.
template <typename MakeLayout>
worker::PlannedBatch plan_or_throw(MakeLayout&& make_layout, const std::string& where,
                                   const std::vector<int64_t>& indices) {
  worker::PlannedBatch plan;
  std::string error;
  collate_step([&] { error = worker::plan_batch(make_layout(), plan); }, where, indices);
  if (!error.empty()) {
    throw WorkerError("mploader: collating " + where + " failed: layout: " + error, -1, -1,
                      "layout", error);
  }
  return plan;
}

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

Sample InProcessSource::load(int64_t index, const std::string& where) {
  try {
    return dataset_.get(index);
  } catch (...) {
    auto [type, text] = worker::describe_current_exception();
    throw WorkerError("mploader: Dataset::get(" + std::to_string(index) + ") threw " + type +
                          ": " + text + " [" + where + "]",
                      -1, index, type, text);
  }
}

std::optional<Batch> InProcessSource::next() {
  if (position_ >= batches_.size()) return std::nullopt;
  const uint64_t position = position_++;
  const uint64_t sequence = plan_sequence(sequences_, position);
  std::vector<int64_t>& indices = batches_[position];
  const std::string where = batch_place(sequence, epoch_, indices);
  worker::PlannedBatch plan;
  std::shared_ptr<void> memory;
  uint8_t* base = nullptr;
  if (collator_.streams() && !indices.empty()) {  // one sample at a time, as in a worker
    std::vector<at::Tensor> views;
    for (size_t row = 0; row < indices.size(); ++row) {
      Sample sample = load(indices[row], where);
      if (row == 0) {
        plan = plan_or_throw([&] { return collator_.layout_from_first(sample, indices.size()); },
                             where, indices);
        memory = buffers_->take(std::max<uint64_t>(plan.total_bytes, 1), base);
        views = worker::views_into(base, plan);
      }
      collate_step([&] { collator_.fill_row(row, sample, plan.layout, views); }, where, indices);
    }
  } else {
    std::vector<Sample> samples;
    for (int64_t index : indices) samples.push_back(load(index, where));
    plan = plan_or_throw([&] { return collator_.layout(samples); }, where, indices);
    memory = buffers_->take(std::max<uint64_t>(plan.total_bytes, 1), base);
    std::vector<at::Tensor> views = worker::views_into(base, plan);
    collate_step([&] { collator_.fill(samples, views); }, where, indices);
  }
  auto descriptor = std::make_unique<ipc::TaskDescriptor>();
  worker::write_tensor_table(plan, *descriptor);
  descriptor->epoch = epoch_;
  descriptor->sequence = sequence;
  return BatchBuilder::from_table(*descriptor, base, plan.total_bytes, std::move(memory),
                                  std::move(indices), -1);
}

}  // namespace mploader::detail
