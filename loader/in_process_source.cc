#include "loader/in_process_source.h"

#include "loader/batch_builder.h"
#include "loader/messages.h"
#include "worker/batch_writer.h"
#include "worker/exception_text.h"

#include <mploader/errors.h>

#include <ATen/ATen.h>

#include <tuple>


namespace mploader::detail {

void InProcessSource::start_epoch(std::vector<std::vector<int64_t>> batches,
                                  std::vector<uint64_t> sequences, uint64_t epoch) {
  batches_ = std::move(batches);
  sequences_ = std::move(sequences);
  epoch_ = epoch;
  position_ = 0;
}

std::optional<Batch> InProcessSource::next() {
  if (position_ >= batches_.size()) return std::nullopt;
  const uint64_t position = position_++;
  const uint64_t sequence = sequences_.empty() ? position : sequences_[position];
  std::vector<int64_t>& indices = batches_[position];
  const std::string where = "batch " + std::to_string(sequence) + " of epoch " +
                            std::to_string(epoch_) + ", indices " +
                            messages::index_list(indices) + ", num_workers = 0";
  std::vector<Sample> samples;
  for (int64_t index : indices) {
    try {
      samples.push_back(dataset_.get(index));
    } catch (...) {
      auto [type, text] = worker::describe_current_exception();
      throw WorkerError("mploader: Dataset::get(" + std::to_string(index) + ") threw " + type +
                            ": " + text + " [" + where + "]",
                        -1, index, type, text);
    }
  }
  worker::PlannedBatch plan;
  // Typed as the workers type it: the exception's type, or "layout" for a slot-table limit.
  std::string error_type = "layout", error;
  try {
    error = worker::plan_batch(collator_.layout(samples), plan);
  } catch (...) {
    std::tie(error_type, error) = worker::describe_current_exception();
  }
  if (!error.empty()) {
    throw WorkerError("mploader: collating " + where + " failed: " + error_type + ": " + error,
                      -1, -1, error_type, error);
  }
  auto buffer = std::make_shared<at::Tensor>(
      at::empty({static_cast<int64_t>(std::max<uint64_t>(plan.total_bytes, 1))}, at::kByte));
  auto* base = buffer->data_ptr<uint8_t>();
  std::vector<at::Tensor> views = worker::views_into(base, plan);
  try {
    collator_.fill(samples, views);
  } catch (...) {
    auto [type, text] = worker::describe_current_exception();
    throw WorkerError("mploader: collating " + where + " failed: " + type + ": " + text, -1, -1,
                      type, text);
  }
  auto descriptor = std::make_unique<ipc::TaskDescriptor>();
  worker::write_tensor_table(plan, *descriptor);
  descriptor->epoch = epoch_;
  descriptor->sequence = sequence;
  return BatchBuilder::from_table(*descriptor, base, plan.total_bytes, buffer,
                                  std::move(indices), -1);
}

}  // namespace mploader::detail
