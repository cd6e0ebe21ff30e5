#include "core/assembly.h"

#include "core/exception_text.h"
#include "core/text_fields.h"
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
  Dataset& dataset() { return dataset_; }
  BatchSink& sink() { return sink_; }
  const int64_t* indices() const { return indices_; }

  // A dataset call outside get() failed: records it as kDatasetError from `call`.
  void dataset_failed(DatasetCall call, int64_t index) {
    auto [type, message] = detail::describe_current_exception();
    failure = BatchFailure{ipc::TaskStatus::kDatasetError, index, type, message, call};
  }

  bool load(size_t row, Sample& out) {
    const int64_t index = indices_[row];
    if (!sink_.begin_sample(index, ipc::WorkerPhase::kDatasetGet)) {
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

  // Plans offsets for the collator's layout, and for the text fields of `texts_of` when given;
  // a tensor-table limit fails as type "layout".
  template <typename MakeLayout>
  bool plan(MakeLayout&& make_layout, PlannedBatch& plan, int64_t row,
            const std::vector<Sample>* texts_of = nullptr) {
    std::string error;
    const auto make_plan = [&] {
      std::vector<TensorLayout> layout = make_layout();
      std::vector<ipc::FieldKind> kinds;
      if (texts_of != nullptr) append_text_layout(*texts_of, layout, kinds);
      error = plan_batch(std::move(layout), plan, std::move(kinds));
    };
    if (!collate(make_plan, row)) return false;
    if (error.empty()) return true;
    failure = BatchFailure{ipc::TaskStatus::kCollateError, -1, "layout", error};
    return false;
  }

  bool open(const PlannedBatch& plan, std::vector<at::Tensor>& views) {
    uint8_t* base = nullptr;
    return open(plan, views, base);
  }

  bool open(const PlannedBatch& plan, std::vector<at::Tensor>& views, uint8_t*& base) {
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

// The whole batch of samples at once: rows from `loaded` on are loaded here, those before it
// already are. Text fields are checked before the collator sees the samples (so a field that
// changes kind is named as such) and written after its tensors.
BatchFailure assemble_samples(Assembly& a, std::vector<Sample>& samples, size_t loaded,
                              PlannedBatch& plan) {
  for (size_t row = loaded; row < samples.size(); ++row) {
    if (!a.load(row, samples[row])) return a.failure;
  }
  std::vector<at::Tensor> views;
  uint8_t* base = nullptr;
  if (!a.collate([&] { check_text_fields(samples); }, -1) ||
      !a.plan([&] { return a.collator().layout(samples); }, plan, -1, &samples) ||
      !a.open(plan, views, base) || !a.collate([&] { a.collator().fill(samples, views); }, -1) ||
      !a.collate([&] { fill_text_fields(samples, plan, base); }, -1)) {
    return a.failure;
  }
  return {};
}

// One sample at a time: the worker holds one sample rather than a batch of them (less memory,
// and the sample is still in cache when it is copied). A batch with text fields is sized by
// all its rows' texts, so it is collated from the whole batch of samples instead.
BatchFailure assemble_streaming(Assembly& a, size_t count, PlannedBatch& plan) {
  std::vector<at::Tensor> views;
  for (size_t row = 0; row < count; ++row) {
    Sample sample;
    if (!a.load(row, sample)) return a.failure;
    const auto r = static_cast<int64_t>(row);
    if (row == 0 && !sample.texts().empty()) {
      std::vector<Sample> samples(count);
      samples[0] = std::move(sample);
      return assemble_samples(a, samples, 1, plan);
    }
    if (row > 0 && !sample.texts().empty() &&
        !a.collate([&] { check_no_text(row, sample, plan.layout); }, r)) {
      return a.failure;
    }
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

// What a dataset's sample_layout() must be for its rows to be planned; empty when it is fine.
std::string layout_problem(const SampleLayout& layout) {
  if (layout.empty()) return "it declares no field; declare at least one, or return nullopt";
  for (size_t k = 0; k < layout.size(); ++k) {
    const FieldLayout& f = layout[k];
    for (size_t j = 0; j < k; ++j) {
      if (layout[j].name == f.name) return "it declares field '" + f.name + "' twice";
    }
    for (int64_t d : f.shape) {
      if (d < 0) return "field '" + f.name + "' has a negative dimension";
    }
    const auto code = static_cast<int>(f.dtype);
    if (f.dtype == at::ScalarType::Undefined || code < 0 ||
        code >= static_cast<int>(at::ScalarType::NumOptions) ||
        c10::isComplexType(f.dtype) || c10::isQIntType(f.dtype)) {
      return "field '" + f.name + "' has dtype " + std::string(c10::toString(f.dtype)) +
             ", which a batch cannot hold";
    }
  }
  return {};
}

// The batch layout of the in-place path, or nullopt when it does not apply (no layout, or a
// collator that needs samples). `failed` is set when a step failed (see a.failure).
std::optional<SampleLayout> in_place_layout(Assembly& a, size_t batch_size,
                                            PlannedBatch& plan, bool& failed) {
  failed = false;
  std::optional<SampleLayout> layout;
  try {
    layout = a.dataset().sample_layout();
  } catch (...) {
    a.dataset_failed(DatasetCall::kSampleLayout, -1);
    failed = true;
    return std::nullopt;
  }
  if (!layout) return std::nullopt;
  if (std::string problem = layout_problem(*layout); !problem.empty()) {
    a.failure = BatchFailure{ipc::TaskStatus::kDatasetError, -1, "invalid sample layout",
                             problem, DatasetCall::kSampleLayout};
    failed = true;
    return std::nullopt;
  }
  std::optional<std::vector<TensorLayout>> rows;
  if (!a.collate([&] { rows = a.collator().layout_for_rows(*layout, batch_size); }, -1)) {
    failed = true;
    return std::nullopt;
  }
  if (!rows) return std::nullopt;
  if (!a.plan([&] { return std::move(*rows); }, plan, -1)) {
    failed = true;
    return std::nullopt;
  }
  return layout;
}

// Checks that a collator's layout_for_rows() kept its contract: tensor k is field k, stacked.
std::string rows_contract_problem(const SampleLayout& layout, const PlannedBatch& plan,
                                  size_t count) {
  bool ok = plan.layout.size() == layout.size();
  for (size_t k = 0; ok && k < layout.size(); ++k) {
    const TensorLayout& t = plan.layout[k];
    ok = t.name == layout[k].name && t.dtype == layout[k].dtype &&
         plan.nbytes[k] == layout[k].nbytes() * count;
  }
  if (ok) return {};
  return "the collator's layout_for_rows() does not stack the sample layout's fields in order "
         "(tensor k must be field k, [batch, field shape...]); fix the collator, or return "
         "nullopt from layout_for_rows() to collate from samples";
}

// Called by the default write_batch() before each row: the sink's progress and cancel check.
struct RowContext {
  BatchSink* sink;
  const int64_t* indices;
  bool cancelled = false;
};

bool begin_row(void* context, size_t row) {
  auto* c = static_cast<RowContext*>(context);
  c->cancelled = !c->sink->begin_sample(c->indices[row], ipc::WorkerPhase::kDatasetWrite);
  return !c->cancelled;
}

// The in-place path: the dataset writes the batch's rows straight into the sink's memory.
BatchFailure write_in_place(Assembly& a, const SampleLayout& layout, size_t count,
                            const PlannedBatch& plan) {
  if (std::string problem = rows_contract_problem(layout, plan, count); !problem.empty()) {
    return BatchFailure{ipc::TaskStatus::kCollateError, -1, "layout", problem};
  }
  uint8_t* base = nullptr;
  a.failure = a.sink().open(plan, base);
  if (!a.failure.ok()) return a.failure;
  std::vector<uint8_t*> bases(layout.size());
  std::vector<size_t> field_bytes(layout.size());
  for (size_t k = 0; k < layout.size(); ++k) {
    bases[k] = base + plan.offsets[k];
    field_bytes[k] = layout[k].nbytes();
  }
  BatchWriter writer(layout, bases.data(), field_bytes.data(), count);
  RowContext context{&a.sink(), a.indices()};
  writer.on_row(&begin_row, &context);
  if (!a.sink().begin_sample(a.indices()[0], ipc::WorkerPhase::kDatasetWriteBatch)) {
    return BatchFailure{ipc::TaskStatus::kCancelled, -1, "", ""};
  }
  try {
    a.dataset().write_batch(a.indices(), count, writer);
    if (context.cancelled) return BatchFailure{ipc::TaskStatus::kCancelled, -1, "", ""};
    writer.check_complete();
  } catch (...) {
    const size_t row = writer.current_row();
    if (row < count) {
      a.dataset_failed(DatasetCall::kWrite, a.indices()[row]);
    } else {
      a.dataset_failed(DatasetCall::kWriteBatch, -1);
    }
    return a.failure;
  }
  return {};
}

// The bytes of `plan`'s tensors (its text fields left out), a batch of `rows` samples, scaled
// to a batch of `batch_size`.
uint64_t scaled_tensor_bytes(const PlannedBatch& plan, size_t rows, size_t batch_size) {
  uint64_t text_bytes = 0;
  for (size_t i = 0; i < plan.kinds.size(); ++i) {
    if (plan.kinds[i] != ipc::FieldKind::kTensor) text_bytes += plan.nbytes[i];
  }
  return (plan.total_bytes - text_bytes) * batch_size / rows;
}

}  // namespace

BatchFailure assemble_batch(Dataset& dataset, Collator& collator, const int64_t* indices,
                            size_t count, BatchSink& sink, PlannedBatch& plan) {
  Assembly a(dataset, collator, indices, count, sink);
  // An empty batch (the loader never sends one) takes the whole-batch path, whose layout()
  // refuses it; streaming would make a batch with no layout at all.
  if (count > 0) {
    try {
      dataset.prepare_batch(indices, count);
    } catch (...) {
      a.dataset_failed(DatasetCall::kPrepareBatch, -1);
      return a.failure;
    }
    bool failed = false;
    std::optional<SampleLayout> layout = in_place_layout(a, count, plan, failed);
    if (failed) return a.failure;
    if (layout) return write_in_place(a, *layout, count, plan);
  }
  if (collator.streams() && count > 0) return assemble_streaming(a, count, plan);
  std::vector<Sample> samples(count);
  return assemble_samples(a, samples, 0, plan);
}

BatchFailure probe_batch(Dataset& dataset, Collator& collator, const int64_t* indices,
                         size_t count, size_t batch_size, BatchSink& sink, PlannedBatch& plan,
                         uint64_t& batch_bytes) {
  if (count == 0) {
    return BatchFailure{ipc::TaskStatus::kInternalError, -1, "probe", "no sample to read"};
  }
  Assembly a(dataset, collator, indices, count, sink);
  bool failed = false;
  if (in_place_layout(a, batch_size, plan, failed)) {
    batch_bytes = plan.total_bytes;
    return {};
  }
  if (failed) return a.failure;
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
  if (!a.collate([&] { check_text_fields(samples); }, -1) ||
      !a.plan([&] { return collator.layout(samples); }, plan, -1, &samples)) {
    return a.failure;
  }
  // The collator's estimate covers its tensors; text fields are sized here, from what was read.
  const uint64_t tensor_bytes =
      estimate ? *estimate : scaled_tensor_bytes(plan, samples.size(), batch_size);
  batch_bytes = tensor_bytes + estimate_text_bytes(probed_texts(plan), batch_size).bytes;
  return {};
}

void write_failure(const BatchFailure& f, ipc::TaskDescriptor& d) {
  if (f.status != ipc::TaskStatus::kOk && f.status != ipc::TaskStatus::kCancelled) {
    d.failed_index = f.sample_index;
    d.failed_call = static_cast<uint32_t>(f.call);
    ipc::copy_text(d.error_type, sizeof d.error_type, f.type.c_str());
    ipc::copy_text(d.error_message, sizeof d.error_message, f.message.c_str());
  }
  d.status = static_cast<uint32_t>(f.status);
}

BatchFailure read_failure(const ipc::TaskDescriptor& d) {
  return BatchFailure{static_cast<ipc::TaskStatus>(d.status), d.failed_index,
                      std::string(d.error_type, strnlen(d.error_type, sizeof d.error_type)),
                      std::string(d.error_message, strnlen(d.error_message,
                                                           sizeof d.error_message)),
                      static_cast<DatasetCall>(d.failed_call)};
}

// "Dataset::get(6) threw ", "Dataset::write(6) failed: ", ...: what a kDatasetError names.
static std::string dataset_call_text(const BatchFailure& f) {
  const std::string index = std::to_string(f.sample_index);
  switch (f.call) {
    case DatasetCall::kWrite: return "Dataset::write(" + index + ") failed: ";
    case DatasetCall::kWriteBatch: return "Dataset::write_batch failed: ";
    case DatasetCall::kSampleLayout: return "Dataset::sample_layout() is not usable: ";
    case DatasetCall::kPrepareBatch: return "Dataset::prepare_batch failed: ";
    case DatasetCall::kGet: break;
  }
  return "Dataset::get(" + index + ") threw ";
}

std::string batch_place(uint64_t sequence, uint64_t epoch, const std::vector<int64_t>& indices) {
  return "batch " + std::to_string(sequence) + " of epoch " + std::to_string(epoch) +
         ", indices " + index_list(indices);
}

WorkerError batch_error(const BatchFailure& f, const FailurePlace& place) {
  std::string text;
  if (f.status == ipc::TaskStatus::kDatasetError) {
    text = place.who + ": " + dataset_call_text(f) + f.type + ": " + f.message + " [" +
           place.batch + "]";
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
