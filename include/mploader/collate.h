/// @file
/// Collators turn a list of samples into one batch. They work in two phases so that a worker can
/// size the batch, find room for it in a shared-memory slot, and then write the batch straight
/// into that slot with no intermediate copy.
#pragma once

#include <mploader/errors.h>
#include <mploader/sample_writer.h>
#include <mploader/tensor_dict.h>

#include <c10/core/ScalarType.h>

#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace mploader {

/// What the built-in collators throw when one sample of the batch is at fault (its shape, its
/// names, a tensor that cannot be copied). A collator knows rows, positions in the batch; what()
/// names samples by row. Workers and the num_workers = 0 path name them by dataset index
/// instead and report the index of row() as WorkerError::sample_index(). A custom collator may
/// throw it too.
class SampleError : public Error {
 public:
  /// How a message calls the sample in row `row`: "sample 1", or by dataset index "sample 6".
  using NameOf = std::function<std::string(size_t row)>;
  /// `row`: the sample at fault; `message(name_of)` writes the text, naming every sample it
  /// mentions through `name_of`.
  SampleError(size_t row, std::function<std::string(const NameOf&)> message);
  size_t row() const { return row_; }  ///< The position in the batch of the sample at fault.
  /// The message with the sample in row r called "sample <indices[r]>" (r < count).
  std::string message_for(const int64_t* indices, size_t count) const;

 private:
  size_t row_;
  std::function<std::string(const NameOf&)> message_;
};

/// Name, element type and shape of one tensor of a batch.
struct TensorLayout {
  std::string name;            ///< The tensor's name in the batch.
  at::ScalarType dtype;        ///< Its element type.
  std::vector<int64_t> shape;  ///< Its shape, batch dimension first.
};

/// A collator is used by one thread at a time (each worker owns a copy after fork).
/// Turns the samples of one batch into the batch's tensors, in two phases (layout, then fill
/// into preallocated shared memory). Subclass it for a custom batch format and register it with
/// MPLOADER_REGISTER_COLLATOR to use it under spawn.
class Collator {
 public:
  virtual ~Collator() = default;  ///< Collators are owned through shared_ptr.
  /// Phase 1: the tensors the batch will hold. Throws if the samples cannot be collated.
  virtual std::vector<TensorLayout> layout(const std::vector<Sample>& samples) = 0;
  /// Phase 2: writes the batch into `outputs`, preallocated to match layout() in order.
  virtual void fill(const std::vector<Sample>& samples, std::vector<at::Tensor>& outputs) = 0;
  /// Bytes a batch of `batch_size` samples like `sample` would need, or nullopt when that
  /// cannot be known without a whole batch. Used to size ring slots.
  virtual std::optional<size_t> estimate_batch_bytes(const Sample& sample, size_t batch_size);

  // Streaming (optional), for collators whose batch layout follows from the first sample
  // alone (stack_collate does): a worker then writes each sample into the slot as soon as it
  // is loaded and holds one sample at a time instead of a batch of them. When streams() is
  // true, workers (and the num_workers = 0 path) call layout_from_first() once per batch and
  // fill_row() for every sample, row 0 included, instead of layout() and fill().

  /// True when this collator implements layout_from_first() and fill_row(). Default: false.
  virtual bool streams() const { return false; }
  /// The batch's layout from its first sample and its size. The default throws Error (a
  /// collator that does not stream).
  virtual std::vector<TensorLayout> layout_from_first(const Sample& first, size_t batch_size);
  /// Writes `sample` into row `row` of `outputs` (allocated to match `layout`). Throws, with
  /// the message layout() would give, when the sample does not fit the layout. The default
  /// throws Error.
  virtual void fill_row(size_t row, const Sample& sample, const std::vector<TensorLayout>& layout,
                        std::vector<at::Tensor>& outputs);

  // In place (optional): for collators whose batch tensor k is field k of every sample, stacked
  // ([batch, field shape...], C-contiguous), so that a dataset with a sample_layout() can
  // write each sample straight into its row (Dataset::write).

  /// The batch's layout for `batch_size` samples of `sample`, when this collator stacks each
  /// field into its own tensor in field order; nullopt (the default): it needs the samples
  /// (Dataset::get). stack_collate() stacks.
  virtual std::optional<std::vector<TensorLayout>> layout_for_rows(const SampleLayout& sample,
                                                                   size_t batch_size);

  /// How a spawned worker rebuilds this collator: `stack`, `pad <value> <suffix>` (then a
  /// `<key> <value>` line for each PadOptions field away from its default), or `<factory>` and
  /// `<config>` on two lines for one registered with MPLOADER_REGISTER_COLLATOR. nullopt: it
  /// cannot be rebuilt (function_collate), and start_method spawn is refused.
  virtual std::optional<std::string> recipe() const { return std::nullopt; }
};

/// Stacks equal-shaped tensors along a new first dimension: [B, ...].
std::shared_ptr<Collator> stack_collate();

/// Pads tensors of different first-dimension lengths to the longest in the batch with
/// `pad_value`, and adds `<name><lengths_suffix>` (int64 [B]) for each padded tensor.
/// Zero-dimensional tensors are stacked. The same as pad_collate(PadOptions) with these two
/// fields set and the others at their defaults.
std::shared_ptr<Collator> pad_collate(double pad_value = 0.0,
                                      std::string lengths_suffix = "_lengths");

/// Which dimensions of a sample's tensor pad_collate() lets differ between the samples of a
/// batch.
enum class PadDims {
  kFirst,  ///< Only the first (sequences): `<name><lengths_suffix>`, int64 [B], is added.
  kAll,    ///< Every one (images [C, H, W]): `<name><sizes_suffix>`, int64 [B, ndim], is added.
};

/// How pad_collate(const PadOptions&) pads. The batch's tensors (names, dtypes, ranks) follow
/// from these options and the samples' names alone, never from whether a batch happens to
/// vary: with kAll, a batch of equal-sized images still carries its sizes tensor.
struct PadOptions {
  /// What fills the padded elements (converted to each tensor's dtype).
  double pad_value = 0.0;
  /// Which dimensions may differ; the others must be equal in every sample of a batch.
  PadDims dims = PadDims::kFirst;
  /// With kFirst, `<name><lengths_suffix>` holds each sample's first-dimension length.
  std::string lengths_suffix = "_lengths";
  /// With kAll, `<name><sizes_suffix>` holds each sample's shape, one row per sample.
  std::string sizes_suffix = "_sizes";
  /// Rounds each padded dimension (the first with kFirst, every one with kAll, channels
  /// included) up to a multiple of this, as Hugging Face's collators do for tensor cores.
  /// 1: the batch's largest.
  int64_t pad_to_multiple_of = 1;
};

/// Pads every tensor of one or more dimensions to the batch's largest size in each dimension
/// `options.dims` lets vary, filling the rest with `options.pad_value`; each sample's values
/// sit at the front (index 0) of every dimension. After each padded tensor comes its lengths
/// (kFirst) or sizes (kAll) tensor, so nested names ("audio/features") keep their group.
/// Zero-dimensional tensors are stacked. Samples of different ranks or dtypes in one tensor
/// are a SampleError naming both samples. Throws OptionError("collate", ...) for an empty
/// suffix, a suffix with a line break, or pad_to_multiple_of below 1.
std::shared_ptr<Collator> pad_collate(const PadOptions& options);

/// A collate function: the samples of one batch in, the batch's tensors out.
using CollateFunction = std::function<TensorDict(const std::vector<Sample>&)>;
/// Runs `fn` in the worker and copies its result into the slot (one copy). It cannot be rebuilt
/// in a spawned worker: start_method spawn or forkserver with it is an OptionError.
std::shared_ptr<Collator> function_collate(CollateFunction fn);

}  // namespace mploader
