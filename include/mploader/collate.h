// Collators turn a list of samples into one batch. They work in two phases so that a worker can
// size the batch, find room for it in a shared-memory slot, and then write the batch straight
// into that slot with no intermediate copy.
#pragma once

#include <mploader/tensor_dict.h>

#include <c10/core/ScalarType.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mploader {

// Name, element type and shape of one tensor of a batch.
struct TensorLayout {
  std::string name;
  at::ScalarType dtype;
  std::vector<int64_t> shape;
};

// A collator is used by one thread at a time (each worker owns a copy after fork).
class Collator {
 public:
  virtual ~Collator() = default;
  // Phase 1: the tensors the batch will hold. Throws if the samples cannot be collated.
  virtual std::vector<TensorLayout> layout(const std::vector<Sample>& samples) = 0;
  // Phase 2: writes the batch into `outputs`, preallocated to match layout() in order.
  virtual void fill(const std::vector<Sample>& samples, std::vector<at::Tensor>& outputs) = 0;
  // Bytes a batch of `batch_size` samples like `sample` would need, or nullopt when that
  // cannot be known without a whole batch. Used to size ring slots.
  virtual std::optional<size_t> estimate_batch_bytes(const Sample& sample, size_t batch_size);

  // Optional streaming form, for collators whose batch layout follows from the first sample
  // alone (stack_collate does). A worker then writes each sample into the slot as soon as it
  // is loaded and holds one sample at a time instead of a batch of them. When streams() is
  // true, workers call layout_from_first() once per batch and fill_row() for every sample
  // (row 0 included) instead of layout() and fill(); fill_row() throws, like layout(), when a
  // sample does not fit the layout. The defaults do not stream.
  virtual bool streams() const { return false; }
  virtual std::vector<TensorLayout> layout_from_first(const Sample& first, size_t batch_size);
  virtual void fill_row(size_t row, const Sample& sample, const std::vector<TensorLayout>& layout,
                        std::vector<at::Tensor>& outputs);
  // How a spawned worker rebuilds this collator: "stack", "pad <value> <suffix>", or
  // "<factory>\n<config>" for one registered with MPLOADER_REGISTER_COLLATOR. nullopt: it
  // cannot be rebuilt (function_collate), and start_method spawn is refused.
  virtual std::optional<std::string> recipe() const { return std::nullopt; }
};

// Stacks equal-shaped tensors along a new first dimension: [B, ...].
std::shared_ptr<Collator> stack_collate();

// Pads tensors of different first-dimension lengths to the longest in the batch with
// `pad_value`, and adds "<name><lengths_suffix>" (int64 [B]) for each padded tensor.
// Zero-dimensional tensors are stacked.
std::shared_ptr<Collator> pad_collate(double pad_value = 0.0,
                                      std::string lengths_suffix = "_lengths");

// Runs `fn` in the worker and copies its result into the slot (one copy).
using CollateFunction = std::function<TensorDict(const std::vector<Sample>&)>;
std::shared_ptr<Collator> function_collate(CollateFunction fn);

}  // namespace mploader
