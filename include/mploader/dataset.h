/// @file
/// Dataset: the user's data, read one sample at a time by index.
#pragma once

#include <mploader/loading_context.h>
#include <mploader/sample_writer.h>
#include <mploader/tensor_dict.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace mploader {

/// How to build a dataset again in a fresh process (start_method spawn): the name of a factory
/// registered with MPLOADER_REGISTER_DATASET (mploader/registry.h) and the text it is given.
struct DatasetRecipe {
  std::string factory;  ///< The name given to MPLOADER_REGISTER_DATASET.
  std::string config;   ///< The text its factory is called with (a path, a JSON object, ...).
};

/// Subclass this, and implement get(), or sample_layout() and write(), or all three.
///
/// get() returns each sample as tensors of its own, which collation then copies into the batch.
/// A dataset that declares sample_layout() instead writes each sample straight into its row of
/// the batch with write() (and, optionally, a whole batch at once with write_batch()): each byte
/// is written once, no sample tensor is allocated, and sizing the ring slots reads no sample.
/// The in-place path is taken when the collator stacks (stack_collate(), the default); other
/// collators call get(), whose default then builds the sample through write().
/// With num_workers > 0 every worker process has its own copy of the object
/// (fork copies it), so get() needs no locking; per-process resources such as file handles
/// should be opened lazily on first use in the worker. With num_workers > 0 the training
/// process never calls get(): even the read of sample 0 that sizes the ring slots runs in a
/// short-lived worker process, so a lazily opened handle is never inherited by the workers.
class Dataset {
 public:
  virtual ~Dataset() = default;
  /// Number of samples; indices passed to get() are in [0, size()).
  virtual size_t size() const = 0;
  /// One sample as named tensors. Throwing here reaches the training loop as WorkerError.
  /// In worker processes it runs under c10::InferenceMode (its tensors are copied into shared
  /// memory and dropped, so autograd bookkeeping would be pure cost): code here cannot record
  /// gradients. With num_workers = 0 it runs in the caller's own mode.
  /// The default, for a dataset that declares sample_layout(): a sample of fresh tensors
  /// filled by write(). A dataset that implements neither get() nor write() gets an
  /// Error saying so.
  virtual Sample get(int64_t index);

  /// The tensors of every sample, declared up front (or once from the first sample, with
  /// layout_of(get(0))); nullopt (the default): samples come from get() alone. Called in the
  /// workers (once per batch), never in the training process with num_workers > 0.
  virtual std::optional<SampleLayout> sample_layout() const { return std::nullopt; }
  /// Writes sample `index` into `out`, one field of sample_layout() after another. Every field
  /// must be asked for (SampleWriter); throwing here reaches the training loop as WorkerError,
  /// as from get(). Runs under the same mode as get(). The default copies get(index) into
  /// `out`, checking each tensor's dtype and shape against the layout.
  virtual void write(int64_t index, SampleWriter& out);
  /// Writes the samples of `indices` (count of them) into `out` at once: one gather per
  /// batch for in-memory data (PyTorch's __getitems__). The default calls write() per row.
  virtual void write_batch(const int64_t* indices, size_t count, BatchWriter& out);
  /// Called once per batch, with its indices, before any of its samples is read (by get(),
  /// write() or write_batch()): a dataset that reads from a slow store fetches the batch's
  /// data here at once (merged requests) instead of sample by sample. The default does
  /// nothing. Throwing here fails the batch as get() would.
  virtual void prepare_batch(const int64_t* indices, size_t count) {
    (void)indices;
    (void)count;
  }

  /// How a spawned worker rebuilds this dataset; nullopt (the default) means it cannot be, and
  /// start_method spawn is refused at construction.
  virtual std::optional<DatasetRecipe> recipe() const { return std::nullopt; }
};

}  // namespace mploader
