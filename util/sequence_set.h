// SequenceSet: a set of the numbers 0..size-1 as a bit per number, read and written as sorted
// half-open ranges a word at a time. The loader's record of delivered batches: an epoch may
// hold billions of batches (a saved state names the count), and a per-bit walk over them takes
// seconds where a per-word one takes milliseconds.
//
// Plain value type; no shared state.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace mploader::detail {

class SequenceSet {
 public:
  using Range = std::pair<uint64_t, uint64_t>;  // [begin, end)

  SequenceSet() = default;
  explicit SequenceSet(uint64_t size) { assign(size); }

  // Makes the set empty, over the numbers 0..size-1.
  void assign(uint64_t size) {
    size_ = size;
    words_.assign(static_cast<size_t>((size + 63) / 64), 0);
  }
  uint64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  bool contains(uint64_t n) const { return n < size_ && (words_[n / 64] >> (n % 64)) & 1U; }
  void insert(uint64_t n) { words_[n / 64] |= uint64_t{1} << (n % 64); }
  void erase(uint64_t n) { words_[n / 64] &= ~(uint64_t{1} << (n % 64)); }

  // Members, a word at a time.
  uint64_t count() const {
    uint64_t n = 0;
    for (uint64_t w : words_) n += static_cast<uint64_t>(__builtin_popcountll(w));
    return n;
  }
  // Adds every member of `other`, a set over as many numbers.
  void insert_all(const SequenceSet& other) {
    for (size_t w = 0; w < words_.size() && w < other.words_.size(); ++w) {
      words_[w] |= other.words_[w];
    }
  }

  // Inserts [begin, end), which must lie within 0..size-1: whole words at once.
  void insert_range(uint64_t begin, uint64_t end) {
    while (begin < end && begin % 64 != 0) insert(begin++);
    const uint64_t whole_end = end - end % 64;
    if (begin < whole_end) {
      std::fill(words_.begin() + static_cast<ptrdiff_t>(begin / 64),
                words_.begin() + static_cast<ptrdiff_t>(whole_end / 64), ~uint64_t{0});
      begin = whole_end;
    }
    while (begin < end) insert(begin++);
  }

  // Calls f(begin, end) for each run of members, in order: sorted, disjoint, non-adjacent.
  template <typename F>
  void for_each_range(F&& f) const {
    uint64_t at = next(0, true);
    while (at < size_) {
      const uint64_t end = next(at, false);
      f(at, end);
      at = next(end, true);
    }
  }

  // The members as sorted, disjoint, non-adjacent ranges: a prefix is one range.
  std::vector<Range> ranges() const {
    std::vector<Range> out;
    for_each_range([&out](uint64_t begin, uint64_t end) { out.emplace_back(begin, end); });
    return out;
  }

  friend bool operator==(const SequenceSet& a, const SequenceSet& b) {
    return a.size_ == b.size_ && a.words_ == b.words_;
  }
  friend bool operator!=(const SequenceSet& a, const SequenceSet& b) { return !(a == b); }

 private:
  // The first number >= from whose membership is `member`, or size_. Bits past size_ are
  // never set, so a search for members ends at the last word.
  uint64_t next(uint64_t from, bool member) const {
    if (from >= size_) return size_;
    size_t w = static_cast<size_t>(from / 64);
    uint64_t bits = (member ? words_[w] : ~words_[w]) & (~uint64_t{0} << (from % 64));
    while (bits == 0) {
      if (++w == words_.size()) return size_;
      bits = member ? words_[w] : ~words_[w];
    }
    return std::min<uint64_t>(w * 64 + static_cast<uint64_t>(__builtin_ctzll(bits)), size_);
  }

  uint64_t size_ = 0;
  std::vector<uint64_t> words_;
};

}  // namespace mploader::detail
