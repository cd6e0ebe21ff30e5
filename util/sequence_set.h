// SequenceSet: a set of the numbers 0..size-1, read and written as sorted half-open ranges.
// The loader's record of delivered batches and of delivered positions in a job's order. An
// epoch may hold a trillion samples, so the set keeps ranges while they are few (a prefix is
// one range, whatever its length) and turns into a bit per number only when its ranges would
// cost more than that (a rank's strided positions): its memory is the smaller of the two.
//
// Plain value type; no shared state.
#pragma once

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

  // Makes the set empty, over the numbers 0..size-1. Costs no memory per number.
  void assign(uint64_t size);
  uint64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  bool contains(uint64_t n) const;
  // n must lie within 0..size-1.
  void insert(uint64_t n) { insert_range(n, n + 1); }
  void erase(uint64_t n);
  // Inserts [begin, end), which must lie within 0..size-1.
  void insert_range(uint64_t begin, uint64_t end);
  // Adds every member of `other`, a set over as many numbers.
  void insert_all(const SequenceSet& other);

  uint64_t count() const { return count_; }

  // Calls f(begin, end) for each run of members, in order: sorted, disjoint, non-adjacent.
  template <typename F>
  void for_each_range(F&& f) const {
    if (!dense_) {
      for (const Range& r : ranges_) f(r.first, r.second);
      return;
    }
    uint64_t at = next_in_words(0, true);
    while (at < size_) {
      const uint64_t end = next_in_words(at, false);
      f(at, end);
      at = next_in_words(end, true);
    }
  }

  // The members as sorted, disjoint, non-adjacent ranges: a prefix is one range.
  std::vector<Range> ranges() const;

  friend bool operator==(const SequenceSet& a, const SequenceSet& b) {
    return a.size_ == b.size_ && a.count_ == b.count_ && a.ranges() == b.ranges();
  }
  friend bool operator!=(const SequenceSet& a, const SequenceSet& b) { return !(a == b); }

 private:
  // Ranges cost 128 bits each and words one bit per number: past this many ranges, words.
  size_t most_ranges() const;
  void become_dense();
  void insert_words(uint64_t begin, uint64_t end);
  // The first number >= from whose membership is `member`, or size_ (dense form).
  uint64_t next_in_words(uint64_t from, bool member) const;

  uint64_t size_ = 0;
  uint64_t count_ = 0;
  bool dense_ = false;
  std::vector<Range> ranges_;    // sparse form: sorted, disjoint, non-adjacent
  std::vector<uint64_t> words_;  // dense form: a bit per number
};

}  // namespace mploader::detail
