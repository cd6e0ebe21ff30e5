// Subset: chosen indices of one dataset, and its sources' skip reports mapped back to them.
#include "datasets/compose_recipes.h"
#include "datasets/skip_translation.h"
#include "util/errors.h"

#include <mploader/compose.h>
#include <mploader/errors.h>

#include <algorithm>
#include <stdexcept>

namespace mploader {

// The source's reported index is usually the one being loaded (the hint); any other is looked
// up: first among the rows of the batch, then in the whole subset.
class SubsetSkipTranslator final : public detail::SkipTranslation {
 public:
  SubsetSkipTranslator(Subset& subset, const int64_t* outer_rows, const int64_t* source_rows,
                       size_t count)
      : subset_(subset), outer_rows_(outer_rows), source_rows_(source_rows), count_(count) {}

 private:
  int64_t outer(int64_t index, bool substitute) override {
    for (size_t r = 0; r < count_; ++r) {
      if (source_rows_[r] == index) return outer_rows_[r];
    }
    const int64_t found = subset_.outer_index_of(index);
    // A reported index outside the subset still names the sample being loaded.
    return found >= 0 || substitute || count_ == 0 ? found : outer_rows_[0];
  }

  Subset& subset_;
  const int64_t* outer_rows_;
  const int64_t* source_rows_;
  size_t count_;
};

Subset::Subset(std::shared_ptr<Dataset> source, std::vector<int64_t> indices)
    : source_(std::move(source)), indices_(std::move(indices)) {
  if (!source_) {
    throw OptionError("source", "mploader: Subset's source dataset is null; pass the dataset "
                                "to take the indices from");
  }
  const size_t n = source_->size();
  for (size_t i = 0; i < indices_.size(); ++i) {
    const int64_t value = indices_[i];
    if (value < 0 || static_cast<uint64_t>(value) >= n) {
      throw OptionError("indices", "mploader: Subset index at position " + std::to_string(i) +
                                       " is " + std::to_string(value) + ", outside the "
                                       "source's [0, " + std::to_string(n) + "); give indices "
                                       "of the source's samples (negative ones do not count "
                                       "from the end, unlike Python)");
    }
  }
}

int64_t Subset::source_index(int64_t index) const {
  if (index < 0 || static_cast<uint64_t>(index) >= indices_.size()) {
    throw OptionError("index", detail::message("Subset", "index " + std::to_string(index) +
                                                             " is outside [0, " +
                                                             std::to_string(indices_.size()) +
                                                             ")",
                                               "Give an index from 0 to size() - 1"));
  }
  return indices_[static_cast<size_t>(index)];
}

Sample Subset::get(int64_t index) {
  const int64_t source_index = this->source_index(index);
  SubsetSkipTranslator translate(*this, &index, &source_index, 1);
  return source_->get(source_index);
}

void Subset::write(int64_t index, SampleWriter& out) {
  const int64_t source_index = this->source_index(index);
  SubsetSkipTranslator translate(*this, &index, &source_index, 1);
  source_->write(source_index, out);
}

void Subset::write_batch(const int64_t* indices, size_t count, BatchWriter& out) {
  std::vector<int64_t> mapped(count);
  for (size_t r = 0; r < count; ++r) mapped[r] = source_index(indices[r]);
  SubsetSkipTranslator translate(*this, indices, mapped.data(), count);
  source_->write_batch(mapped.data(), count, out);
}

void Subset::prepare_batch(const int64_t* indices, size_t count) {
  std::vector<int64_t> mapped;  // an index outside fails in get(), which names it
  mapped.reserve(count);
  for (size_t r = 0; r < count; ++r) {
    if (indices[r] >= 0 && static_cast<uint64_t>(indices[r]) < indices_.size()) {
      mapped.push_back(indices_[static_cast<size_t>(indices[r])]);
    }
  }
  source_->prepare_batch(mapped.data(), mapped.size());
}

std::optional<DatasetRecipe> Subset::recipe() const { return detail::subset_recipe(*this); }

int64_t Subset::outer_index_of(int64_t source_index) {
  std::call_once(reverse_once_, [this] {  // skips are rare: built on first need
    reverse_.reserve(indices_.size());
    for (size_t i = 0; i < indices_.size(); ++i) {
      reverse_.emplace_back(indices_[i], static_cast<int64_t>(i));
    }
    std::sort(reverse_.begin(), reverse_.end());
  });
  const auto it = std::lower_bound(reverse_.begin(), reverse_.end(),
                                   std::make_pair(source_index, int64_t{0}));
  return it != reverse_.end() && it->first == source_index ? it->second : -1;
}

}  // namespace mploader
