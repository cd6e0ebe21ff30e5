// ConcatDataset: PyTorch's index mapping (bisect on the cumulative sizes), the source field,
// and the in-place path through the sources.
#include "datasets/compose_recipes.h"
#include "datasets/skip_translation.h"
#include "util/errors.h"

#include <mploader/compose.h>
#include <mploader/errors.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <array>
#include <limits>
#include <stdexcept>

namespace mploader {
namespace {

constexpr int64_t kMaxIndex = std::numeric_limits<int64_t>::max();

std::string position(size_t s, size_t count) {
  return std::to_string(s) + " (of " + std::to_string(count) + ", counting from 0)";
}

bool same_layout(const SampleLayout& a, const SampleLayout& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k) {
    if (a[k].name != b[k].name || a[k].dtype != b[k].dtype || a[k].shape != b[k].shape) {
      return false;
    }
  }
  return true;
}

[[noreturn]] void field_clash(const std::string& field, size_t source) {
  throw OptionError("source_field",
                    "mploader: ConcatDataset's source_field '" + field + "' is already a tensor "
                    "of source " + std::to_string(source) + "'s samples; choose another name "
                    "(or \"\" for no source field)");
}

}  // namespace

ConcatDataset::ConcatDataset(std::vector<std::shared_ptr<Dataset>> sources,
                             std::string source_field)
    : sources_(std::move(sources)), source_field_(std::move(source_field)) {
  if (sources_.empty()) {
    throw OptionError("sources", "mploader: ConcatDataset needs at least one source dataset, "
                                 "got an empty list; pass the datasets to concatenate");
  }
  int64_t total = 0;
  for (size_t s = 0; s < sources_.size(); ++s) {
    if (!sources_[s]) {
      throw OptionError("sources", "mploader: ConcatDataset source " +
                                       position(s, sources_.size()) +
                                       " is null; pass a dataset, or leave it out of the list");
    }
    const size_t n = sources_[s]->size();
    if (n > static_cast<uint64_t>(kMaxIndex - total)) {
      throw OptionError("sources", "mploader: ConcatDataset's sources hold more samples than "
                                   "int64 can index: source " + position(s, sources_.size()) +
                                   " has " + std::to_string(n) + " after " +
                                   std::to_string(total) + " in those before it; concatenate "
                                   "fewer or smaller datasets");
    }
    total += static_cast<int64_t>(n);
    cumulative_.push_back(total);
  }
}

size_t ConcatDataset::size() const { return static_cast<size_t>(cumulative_.back()); }

int64_t ConcatDataset::source_size(size_t s) const {
  if (s >= sources_.size()) {
    throw OptionError("s", detail::message("ConcatDataset::source_size",
                                           "there is no source " + std::to_string(s) + " of " +
                                               std::to_string(sources_.size()),
                                           "Give a source below num_sources()"));
  }
  return cumulative_[s] - offset(s);
}

std::vector<size_t> ConcatDataset::sizes() const {
  std::vector<size_t> out;
  for (size_t s = 0; s < sources_.size(); ++s) out.push_back(static_cast<size_t>(source_size(s)));
  return out;
}

ConcatDataset::Location ConcatDataset::locate(int64_t index) const {
  if (index < 0 || index >= cumulative_.back()) {
    throw OptionError("index", detail::message("ConcatDataset",
                                               "index " + std::to_string(index) +
                                                   " is outside [0, " +
                                                   std::to_string(cumulative_.back()) + ")",
                                               "Give an index from 0 to size() - 1"));
  }
  // PyTorch's bisect_right: the first source whose cumulative size exceeds the index, which
  // passes over empty sources.
  const auto it = std::upper_bound(cumulative_.begin(), cumulative_.end(), index);
  const size_t s = static_cast<size_t>(it - cumulative_.begin());
  return {s, index - offset(s)};
}

Sample ConcatDataset::get(int64_t index) {
  const Location at = locate(index);
  detail::OffsetSkipTranslation translate(offset(at.source));
  Sample sample = sources_[at.source]->get(at.index);
  if (!source_field_.empty()) {
    if (sample.contains(source_field_)) field_clash(source_field_, at.source);
    sample.set(source_field_, at::scalar_tensor(static_cast<int64_t>(at.source), at::kLong));
  }
  return sample;
}

std::optional<SampleLayout> ConcatDataset::sample_layout() const {
  std::optional<SampleLayout> common;
  for (size_t s = 0; s < sources_.size(); ++s) {
    if (sources_[s]->size() == 0) continue;  // never read: its layout does not matter
    std::optional<SampleLayout> layout = sources_[s]->sample_layout();
    if (!layout) return std::nullopt;
    if (!common) {
      common = std::move(layout);
    } else if (!same_layout(*common, *layout)) {
      return std::nullopt;
    }
  }
  if (!common || source_field_.empty()) return common;
  for (const FieldLayout& f : *common) {
    if (f.name == source_field_) field_clash(source_field_, 0);
  }
  common->push_back(FieldLayout{source_field_, at::kLong, {}});
  return common;
}

void ConcatDataset::write(int64_t index, SampleWriter& out) {
  const Location at = locate(index);
  detail::OffsetSkipTranslation translate(offset(at.source));
  if (source_field_.empty()) {
    sources_[at.source]->write(at.index, out);
    return;
  }
  // The source declared every field but the last, ours: it writes through a writer of its own
  // layout over the same memory (its default write() would refuse a field it never returns).
  const size_t fields = out.num_fields() - 1;
  if (fields > 64) {
    throw OptionError("sources", detail::message("ConcatDataset",
                                                 "the sources' samples hold " +
                                                     std::to_string(fields) +
                                                     " tensors, and a sample holds at most 64",
                                                 "Give sources of 64 tensors or fewer, or "
                                                 "group tensors into fewer"));
  }
  std::call_once(source_layout_once_, [&] {
    for (size_t k = 0; k < fields; ++k) source_layout_.push_back(out.field(k));
  });
  std::array<uint8_t*, 64> bases{};  // 64: the most fields a batch's tensor table holds
  std::array<size_t, 64> field_bytes{};
  for (size_t k = 0; k < fields; ++k) {
    bases[k] = static_cast<uint8_t*>(out.bytes(k));
    field_bytes[k] = out.field(k).nbytes();
  }
  SampleWriter source_out(source_layout_, bases.data(), field_bytes.data(), 0);
  sources_[at.source]->write(at.index, source_out);
  source_out.check_complete();
  *out.data<int64_t>(fields) = static_cast<int64_t>(at.source);
}

void ConcatDataset::write_batch(const int64_t* indices, size_t count, BatchWriter& out) {
  if (count == 0 || !source_field_.empty()) return Dataset::write_batch(indices, count, out);
  const Location first = locate(indices[0]);
  const int64_t begin = offset(first.source), end = cumulative_[first.source];
  std::vector<int64_t> local(count);
  for (size_t r = 0; r < count; ++r) {
    if (indices[r] < begin || indices[r] >= end) return Dataset::write_batch(indices, count, out);
    local[r] = indices[r] - begin;
  }
  detail::OffsetSkipTranslation translate(begin);
  sources_[first.source]->write_batch(local.data(), count, out);
}

void ConcatDataset::prepare_batch(const int64_t* indices, size_t count) {
  if (cumulative_.empty()) return;
  std::vector<std::vector<int64_t>> local(sources_.size());
  for (size_t r = 0; r < count; ++r) {
    if (indices[r] < 0 || indices[r] >= cumulative_.back()) continue;  // get() names it
    const Location at = locate(indices[r]);
    local[at.source].push_back(at.index);
  }
  for (size_t s = 0; s < sources_.size(); ++s) {
    if (!local[s].empty()) sources_[s]->prepare_batch(local[s].data(), local[s].size());
  }
}

std::optional<DatasetRecipe> ConcatDataset::recipe() const { return detail::concat_recipe(*this); }

}  // namespace mploader
