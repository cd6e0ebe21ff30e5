#include "batch/assembly.h"

#include "batch/exception_text.h"
#include "util/units.h"

#include <ATen/core/Tensor.h>

#include <cstring>
#include <optional>
#include <vector>

namespace mploader::detail {
namespace {

// The steps of one batch, each of which may fail; the first failure is kept in `failure`.
class Assembly {
 public:
  Assembly(Dataset& dataset, Collator& collator, const int64_t* indices, size_t count,
           BatchSink& sink)
      : dataset_(dataset), collator_(collator), indices_(indices), count_(count), sink_(sink) {}

  Collator& collator() { return collator_; }

  bool load(size_t row, Sample& out) {
    const int64_t index = indices_[row];
    if (!sink_.begin_sample(index)) {
      failure.status = ipc::TaskStatus::kCancelled;
      return false;
    }
    try {
      out = dataset_.get(index);
      return true;
    } catch (...) {
      auto [type, message] = detail::describe_current_exception();
      failure = BatchFailure{ipc::TaskStatus::kDatasetError, index, type, message};
      return false;
    }
  }

  // Runs a collator step on the sample in `row` (-1: on the whole batch).
  template <typename Step>
  bool collate(Step&& step, int64_t row) {
    sink_.begin_collate(row >= 0 ? indices_[row] : -1);
    try {
      step();
      return true;
    } catch (const SampleError& e) {
      // The collator names rows; messages name samples by their dataset indices.
      const int64_t index = e.row() < count_ ? indices_[e.row()] : -1;
      failure = BatchFailure{ipc::TaskStatus::kCollateError, index,
                             detail::describe_current_exception().first,
                             e.message_for(indices_, count_)};
      return false;
    } catch (...) {
      auto [type, message] = detail::describe_current_exception();
      failure = BatchFailure{ipc::TaskStatus::kCollateError, -1, type, message};
      return false;
    }
  }

  // Plans offsets for the collator's layout; a tensor-table limit fails as type "layout".
  template <typename MakeLayout>
  bool plan(MakeLayout&& make_layout, PlannedBatch& plan, int64_t row) {
    std::string error;
    if (!collate([&] { error = plan_batch(make_layout(), plan); }, row)) return false;
    if (error.empty()) return true;
    failure = BatchFailure{ipc::TaskStatus::kCollateError, -1, "layout", error};
    return false;
  }

  bool open(const PlannedBatch& plan, std::vector<at::Tensor>& views) {
    uint8_t* base = nullptr;
    failure = sink_.open(plan, base);
    if (!failure.ok()) return false;
    return collate([&] { views = views_into(base, plan); }, -1);
  }

  BatchFailure failure;

 private:
  Dataset& dataset_;
  Collator& collator_;
  const int64_t* indices_;
  size_t count_;
  BatchSink& sink_;
};

// One sample at a time: the worker holds one sample rather than a batch of them (less memory,
// and the sample is still in cache when it is copied).
BatchFailure assemble_streaming(Assembly& a, size_t count, PlannedBatch& plan) {
  std::vector<at::Tensor> views;
  for (size_t row = 0; row < count; ++row) {
    Sample sample;
    if (!a.load(row, sample)) return a.failure;
    const auto r = static_cast<int64_t>(row);
    if (row == 0 &&
        (!a.plan([&] { return a.collator().layout_from_first(sample, count); }, plan, r) ||
         !a.open(plan, views))) {
      return a.failure;
    }
    if (!a.collate([&] { a.collator().fill_row(row, sample, plan.layout, views); }, r)) {
      return a.failure;
    }
  }
  return {};
}

}  // namespace

BatchFailure assemble_batch(Dataset& dataset, Collator& collator, const int64_t* indices,
                            size_t count, BatchSink& sink, PlannedBatch& plan) {
  Assembly a(dataset, collator, indices, count, sink);
  // An empty batch (the loader never sends one) takes the whole-batch path, whose layout()
  // refuses it; streaming would make a batch with no layout at all.
  if (collator.streams() && count > 0) return assemble_streaming(a, count, plan);
  std::vector<Sample> samples(count);
  for (size_t row = 0; row < count; ++row) {
    if (!a.load(row, samples[row])) return a.failure;
  }
  std::vector<at::Tensor> views;
  if (!a.plan([&] { return collator.layout(samples); }, plan, -1) || !a.open(plan, views) ||
      !a.collate([&] { collator.fill(samples, views); }, -1)) {
    return a.failure;
  }
  return {};
}

BatchFailure probe_batch(Dataset& dataset, Collator& collator, const int64_t* indices,
                         size_t count, size_t batch_size, BatchSink& sink, PlannedBatch& plan,
                         uint64_t& batch_bytes) {
  if (count == 0) {
    return BatchFailure{ipc::TaskStatus::kInternalError, -1, "probe", "no sample to read"};
  }
  Assembly a(dataset, collator, indices, count, sink);
  std::vector<Sample> samples(1);
  if (!a.load(0, samples[0])) return a.failure;
  std::optional<size_t> estimate;
  if (!a.collate([&] { estimate = collator.estimate_batch_bytes(samples[0], batch_size); }, 0)) {
    return a.failure;
  }
  if (!estimate) {
    samples.resize(count);
    for (size_t row = 1; row < count; ++row) {
      if (!a.load(row, samples[row])) return a.failure;
    }
  }
  if (!a.plan([&] { return collator.layout(samples); }, plan, -1)) return a.failure;
  batch_bytes = estimate ? *estimate : plan.total_bytes * batch_size / samples.size();
  return {};
}

void write_failure(const BatchFailure& f, ipc::TaskDescriptor& d) {
  if (f.status != ipc::TaskStatus::kOk && f.status != ipc::TaskStatus::kCancelled) {
    d.failed_index = f.sample_index;
    ipc::copy_text(d.error_type, sizeof d.error_type, f.type.c_str());
    ipc::copy_text(d.error_message, sizeof d.error_message, f.message.c_str());
  }
  d.status = static_cast<uint32_t>(f.status);
}

BatchFailure read_failure(const ipc::TaskDescriptor& d) {
  return BatchFailure{static_cast<ipc::TaskStatus>(d.status), d.failed_index,
                      std::string(d.error_type, strnlen(d.error_type, sizeof d.error_type)),
                      std::string(d.error_message, strnlen(d.error_message,
                                                           sizeof d.error_message))};
}

std::string batch_place(uint64_t sequence, uint64_t epoch, const std::vector<int64_t>& indices) {
  return "batch " + std::to_string(sequence) + " of epoch " + std::to_string(epoch) +
         ", indices " + index_list(indices);
}

WorkerError batch_error(const BatchFailure& f, const FailurePlace& place) {
  std::string text;
  if (f.status == ipc::TaskStatus::kDatasetError) {
    text = place.who + ": Dataset::get(" + std::to_string(f.sample_index) + ") threw " + f.type +
           ": " + f.message + " [" + place.batch + "]";
  } else if (f.type == "layout") {
    text = place.who + ": " + place.batch +
           " cannot be described in a ring slot's tensor table: " + f.message;
  } else {
    text = place.who + ": collating " + place.batch + " failed: " + f.type + ": " + f.message;
  }
  text += ". " + place.consequence;
  // In the training process CUDA works; only a worker's failure may be CUDA after fork.
  if (place.worker_id >= 0) text += cuda_in_worker_hint(f.message);
  return WorkerError(text, place.worker_id, f.sample_index, f.type, f.message);
}

std::string cuda_in_worker_hint(const std::string& text) {
  const bool cuda = text.find("CUDA") != std::string::npos ||
                    text.find("cuda") != std::string::npos ||
                    text.find("initialization error") != std::string::npos;
  if (!cuda) return "";
  return " This looks like CUDA used in a worker: a forked worker cannot use CUDA. Keep CUDA "
         "out of dataset and collate code (move batches to the GPU in the training loop, or "
         "with DevicePrefetcher), or use start_method spawn or forkserver.";
}

}  // namespace mploader::detail
