/// @file
/// Datasets made of other datasets, as in PyTorch's torch.utils.data: ConcatDataset (several
/// datasets one after another) and Subset (chosen indices of one dataset).
///
///   auto both = std::make_shared<mploader::ConcatDataset>(
///       std::vector<std::shared_ptr<mploader::Dataset>>{wiki, books}, "source");
///   auto train = std::make_shared<mploader::Subset>(both, train_indices);
///
/// Both pass every path through to their sources: get(), the in-place path (sample_layout(),
/// write(), write_batch()), skip reports (report_skipped_sample(), whose indices they turn into
/// their own), and spawn (recipe(), registered as "mploader.concat" and "mploader.subset").
#pragma once

#include <mploader/dataset.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mploader {

/// Several datasets one after another: index i is sample i - cumulative_sizes()[s-1] of the
/// first source s with i < cumulative_sizes()[s], exactly as PyTorch's ConcatDataset (a source
/// of size 0 is allowed and never chosen).
///
/// With a `source_field` name, each sample gets one more tensor of that name: an int64 scalar,
/// the position of its source in the list, so a batch says which dataset each row came from.
///
/// The in-place path is taken when every non-empty source declares the same sample_layout();
/// otherwise samples come from get(), and sources whose samples differ (names, dtypes, shapes)
/// fail the batch in the collator, which names the difference. A batch of one source (no
/// source field) goes to that source's write_batch() whole; others are written row by row.
///
/// Thread-safety: as its sources (the Loader gives each worker process its own copy). Owns a
/// share of each source. Errors: the constructor throws OptionError for an empty or null
/// source list or a total size beyond int64; get() and write() throw OptionError("index", ...) for
/// an index outside [0, size()).
class ConcatDataset : public Dataset {
 public:
  /// A position in the concatenation: which source and which sample of it.
  struct Location {
    size_t source;  ///< The source's position in the list given to the constructor.
    int64_t index;  ///< The sample's index in that source.
  };

  /// The sources in order, and the name of the source-position tensor ("" for none).
  /// Throws OptionError("sources", ...) for an empty list, a null source or a total size that
  /// overflows int64.
  explicit ConcatDataset(std::vector<std::shared_ptr<Dataset>> sources,
                         std::string source_field = "");

  size_t size() const override;  ///< The sum of the sources' sizes.
  /// Sample `index` of its source, plus the source field if one is named. Throws
  /// OptionError("source_field", ...) if the source's sample already has a tensor of that name.
  Sample get(int64_t index) override;
  /// The sources' common layout, plus the source field; nullopt when non-empty sources differ
  /// or one declares none. Throws OptionError("source_field", ...) on a clash of names.
  std::optional<SampleLayout> sample_layout() const override;
  void write(int64_t index, SampleWriter& out) override;  ///< Through the source's write().
  /// Through the source's write_batch() when all indices are in one source and there is no
  /// source field; row by row otherwise.
  void write_batch(const int64_t* indices, size_t count, BatchWriter& out) override;
  /// Passes the batch on: each source gets its own samples of it, as its indices.
  void prepare_batch(const int64_t* indices, size_t count) override;
  /// "mploader.concat" with a JSON text of the sources' recipes; nullopt if a source has none
  /// (or the text is too long to pass to a spawned worker): the Loader's message names it.
  std::optional<DatasetRecipe> recipe() const override;

  /// Which source holds `index` and its index there; throws OptionError("index", ...) outside
  /// [0, size()).
  Location locate(int64_t index) const;
  size_t num_sources() const { return sources_.size(); }  ///< The number of sources.
  /// The size of source `s`; throws OptionError("s", ...) unless s < num_sources().
  int64_t source_size(size_t s) const;
  /// Every source's size, in order: what MixtureSampler (mixture.h) is built from.
  std::vector<size_t> sizes() const;
  /// PyTorch's cumulative_sizes: entry s is the total size of sources 0..s.
  const std::vector<int64_t>& cumulative_sizes() const { return cumulative_; }
  /// Where source `s`'s samples start: 0 for the first, cumulative_sizes()[s-1] after.
  int64_t offset(size_t s) const { return s == 0 ? 0 : cumulative_[s - 1]; }
  /// The sources, in order.
  const std::vector<std::shared_ptr<Dataset>>& sources() const { return sources_; }
  /// The name of the source-position tensor, "" for none.
  const std::string& source_field() const { return source_field_; }

 private:
  std::vector<std::shared_ptr<Dataset>> sources_;
  std::vector<int64_t> cumulative_;
  std::string source_field_;
  // The fields before the source field, for the sources' write(): taken once from the first
  // writer (the layout is fixed; once_flag: two in-process Loaders may share the dataset).
  SampleLayout source_layout_;
  std::once_flag source_layout_once_;
};

/// The samples of `source` at `indices`, in that order, as PyTorch's Subset: index i is
/// sample indices[i] of the source. Indices may repeat.
///
/// Thread-safety: as its source. Owns a share of the source. Errors: the constructor throws
/// OptionError for a null source or an index outside [0, source->size()); get() and write()
/// throw OptionError("index", ...) for an index outside [0, size()).
class Subset : public Dataset {
 public:
  /// Throws OptionError("source", ...) for a null source and OptionError("indices", ...)
  /// naming the first bad position, its value and the source's size.
  Subset(std::shared_ptr<Dataset> source, std::vector<int64_t> indices);

  size_t size() const override { return indices_.size(); }  ///< The number of indices.
  Sample get(int64_t index) override;  ///< The source's sample indices[index].
  /// The source's layout.
  std::optional<SampleLayout> sample_layout() const override { return source_->sample_layout(); }
  void write(int64_t index, SampleWriter& out) override;  ///< Through the source's write().
  /// Through the source's write_batch(), with the indices mapped.
  void write_batch(const int64_t* indices, size_t count, BatchWriter& out) override;
  /// Passes the batch on to the source, with the indices mapped.
  void prepare_batch(const int64_t* indices, size_t count) override;
  /// "mploader.subset" with a JSON text of the source's recipe and the indices (runs of
  /// consecutive ones as ranges); nullopt if the source has none or the text is too long.
  std::optional<DatasetRecipe> recipe() const override;

  /// The source's index of sample `index`; throws OptionError("index", ...) outside
  /// [0, size()).
  int64_t source_index(int64_t index) const;
  const std::shared_ptr<Dataset>& source() const { return source_; }  ///< The source.
  const std::vector<int64_t>& indices() const { return indices_; }     ///< The indices.

 private:
  // The first subset index of the source's `source_index`; -1 when none.
  int64_t outer_index_of(int64_t source_index);

  std::shared_ptr<Dataset> source_;
  std::vector<int64_t> indices_;
  // Sorted (source index, subset index) pairs, built once, on the first skip report that needs
  // them (once_flag: two in-process Loaders may share the Subset).
  std::vector<std::pair<int64_t, int64_t>> reverse_;
  std::once_flag reverse_once_;
  friend class SubsetSkipTranslator;
};

}  // namespace mploader
