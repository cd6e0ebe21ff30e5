// SequenceSet (sequence_set.h).
#include "util/sequence_set.h"

#include <algorithm>

namespace mploader::detail {

void SequenceSet::assign(uint64_t size) {
  size_ = size;
  count_ = 0;
  dense_ = false;
  ranges_.clear();
  words_.clear();
  words_.shrink_to_fit();
}

size_t SequenceSet::most_ranges() const {
  return static_cast<size_t>(std::max<uint64_t>(1024, size_ / 128));
}

bool SequenceSet::contains(uint64_t n) const {
  if (n >= size_) return false;
  if (dense_) return (words_[n / 64] >> (n % 64)) & 1U;
  // The last range that begins at or before n.
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), n,
                             [](uint64_t v, const Range& r) { return v < r.first; });
  return it != ranges_.begin() && n < std::prev(it)->second;
}

void SequenceSet::insert_range(uint64_t begin, uint64_t end) {
  if (begin >= end) return;
  if (dense_) {
    insert_words(begin, end);
    return;
  }
  // The ranges that touch [begin, end) (overlap or adjoin) merge with it into one.
  auto first = std::lower_bound(ranges_.begin(), ranges_.end(), begin,
                                [](const Range& r, uint64_t v) { return r.second < v; });
  auto last = first;
  uint64_t merged_begin = begin, merged_end = end, covered = 0;
  while (last != ranges_.end() && last->first <= end) {
    merged_begin = std::min(merged_begin, last->first);
    merged_end = std::max(merged_end, last->second);
    covered += last->second - last->first;
    ++last;
  }
  count_ += (merged_end - merged_begin) - covered;
  if (first == last) {
    ranges_.insert(first, Range{merged_begin, merged_end});
  } else {
    *first = Range{merged_begin, merged_end};
    ranges_.erase(std::next(first), last);
  }
  if (ranges_.size() > most_ranges()) become_dense();
}

void SequenceSet::erase(uint64_t n) {
  if (!contains(n)) return;
  --count_;
  if (dense_) {
    words_[n / 64] &= ~(uint64_t{1} << (n % 64));
    return;
  }
  auto it = std::prev(std::upper_bound(ranges_.begin(), ranges_.end(), n,
                                       [](uint64_t v, const Range& r) { return v < r.first; }));
  const Range whole = *it;
  if (whole.first == n && whole.second == n + 1) {
    ranges_.erase(it);
  } else if (whole.first == n) {
    it->first = n + 1;
  } else if (whole.second == n + 1) {
    it->second = n;
  } else {
    it->second = n;
    ranges_.insert(std::next(it), Range{n + 1, whole.second});
    if (ranges_.size() > most_ranges()) become_dense();
  }
}

void SequenceSet::insert_all(const SequenceSet& other) {
  other.for_each_range([this](uint64_t begin, uint64_t end) {
    insert_range(begin, std::min(end, size_));
  });
}

std::vector<SequenceSet::Range> SequenceSet::ranges() const {
  if (!dense_) return ranges_;
  std::vector<Range> out;
  for_each_range([&out](uint64_t begin, uint64_t end) { out.emplace_back(begin, end); });
  return out;
}

void SequenceSet::become_dense() {
  std::vector<Range> ranges = std::move(ranges_);
  ranges_ = {};
  dense_ = true;
  words_.assign(static_cast<size_t>((size_ + 63) / 64), 0);
  for (const Range& r : ranges) insert_words(r.first, r.second);
  count_ = 0;
  for (uint64_t w : words_) count_ += static_cast<uint64_t>(__builtin_popcountll(w));
}

// Whole words at once; count_ follows the bits that change.
void SequenceSet::insert_words(uint64_t begin, uint64_t end) {
  auto set_bits = [this](size_t w, uint64_t mask) {
    count_ += static_cast<uint64_t>(__builtin_popcountll(mask & ~words_[w]));
    words_[w] |= mask;
  };
  while (begin < end && begin % 64 != 0) {
    set_bits(static_cast<size_t>(begin / 64), uint64_t{1} << (begin % 64));
    ++begin;
  }
  for (; begin + 64 <= end; begin += 64) set_bits(static_cast<size_t>(begin / 64), ~uint64_t{0});
  for (; begin < end; ++begin) {
    set_bits(static_cast<size_t>(begin / 64), uint64_t{1} << (begin % 64));
  }
}

uint64_t SequenceSet::next_in_words(uint64_t from, bool member) const {
  if (from >= size_) return size_;
  size_t w = static_cast<size_t>(from / 64);
  uint64_t bits = (member ? words_[w] : ~words_[w]) & (~uint64_t{0} << (from % 64));
  while (bits == 0) {
    if (++w == words_.size()) return size_;
    bits = member ? words_[w] : ~words_[w];
  }
  return std::min<uint64_t>(w * 64 + static_cast<uint64_t>(__builtin_ctzll(bits)), size_);
}

}  // namespace mploader::detail
