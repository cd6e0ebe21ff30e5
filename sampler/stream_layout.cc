// StreamLayout (stream_layout.h).
#include "sampler/stream_layout.h"

#include "util/errors.h"
#include "util/fnv1a.h"

#include <mploader/errors.h>

#include <algorithm>
#include <stdexcept>

namespace mploader::detail {
namespace {

// A position the plan does not hold: the loader asked for a batch past its epoch, its own bug.
[[noreturn]] void throw_past_plan(size_t position, size_t positions) {
  throw Error(message("StreamLayout", "batch position " + std::to_string(position) +
                                          " is past the plan's " + std::to_string(positions),
                      "This is a bug in mploader: report it with the loader's options"));
}

}  // namespace

StreamLayout::StreamLayout(const std::vector<std::vector<SampleRange>>& streams,
                           int64_t batch_size, bool drop_last, int64_t shuffle_block,
                           const std::vector<uint64_t>& keys)
    : batch_size_(batch_size), drop_last_(drop_last) {
  for (size_t k = 0; k < streams.size(); ++k) {
    Stream s{streams[k], {}, 0, 0, BlockShuffle(0, 1, 0)};
    for (const SampleRange& r : s.ranges) {
      s.starts.push_back(s.samples);
      s.samples += r.size();
    }
    const int64_t full = s.samples / batch_size;
    s.batches = static_cast<size_t>(full + (!drop_last && s.samples % batch_size != 0 ? 1 : 0));
    s.shuffle = BlockShuffle(s.samples, shuffle_block, keys.at(k));
    most_rounds_ = std::max(most_rounds_, s.batches);
    base_ += s.batches;
    streams_.push_back(std::move(s));
  }
  listed_ = total_ = base_;
}

size_t StreamLayout::before_round(size_t round) const {
  size_t n = 0;
  for (const Stream& s : streams_) n += std::min(s.batches, round);
  return n;
}

// Rounds alternate the streams that still have batches: the round is the last whose first
// position is at or before `base`, and the stream the one in that round's turn.
StreamLayout::Slot StreamLayout::base_slot(size_t base) const {
  size_t low = 0, high = most_rounds_;  // before_round(low) <= base < before_round(high)
  while (high - low > 1) {
    const size_t mid = low + (high - low) / 2;
    (before_round(mid) <= base ? low : high) = mid;
  }
  size_t turn = base - before_round(low);
  for (size_t k = 0; k < streams_.size(); ++k) {
    if (streams_[k].batches <= low) continue;
    if (turn == 0) return Slot{k, low, 0};
    --turn;
  }
  throw_past_plan(base, base_);
}

StreamLayout::Slot StreamLayout::slot_of(size_t position) const {
  if (position >= total_) throw_past_plan(position, total_);
  size_t listed = position % listed_;  // repeats come from the start
  size_t extra = 0;                    // split batches before this position
  for (size_t base : split_) {
    const size_t first = base + extra;
    if (listed < first) break;
    if (listed == first || listed == first + 1) {
      Slot s = base_slot(base);
      s.half = listed == first ? 1 : 2;
      return s;
    }
    ++extra;
  }
  return base_slot(listed - extra);
}

std::pair<int64_t, int64_t> StreamLayout::outputs_of(const Slot& s) const {
  const int64_t begin = static_cast<int64_t>(s.round) * batch_size_;
  const int64_t end = std::min(streams_[s.stream].samples, begin + batch_size_);
  const int64_t middle = begin + (end - begin + 1) / 2;
  if (s.half == 1) return {begin, middle};
  if (s.half == 2) return {middle, end};
  return {begin, end};
}

int64_t StreamLayout::batch_length(const Slot& s) const {
  const auto [begin, end] = outputs_of(s);
  return end - begin;
}

size_t StreamLayout::unit_of(const Stream& s, int64_t read) {
  const auto it = std::upper_bound(s.starts.begin(), s.starts.end(), read);
  return static_cast<size_t>(it - s.starts.begin()) - 1;
}

int64_t StreamLayout::global_of(const Stream& s, int64_t read) const {
  const size_t unit = unit_of(s, read);
  return s.ranges[unit].begin + (read - s.starts[unit]);
}

std::vector<int64_t> StreamLayout::batch(size_t position) const {
  const Slot slot = slot_of(position);
  const Stream& s = streams_[slot.stream];
  const auto [begin, end] = outputs_of(slot);
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(end - begin));
  for (int64_t o = begin; o < end; ++o) out.push_back(global_of(s, s.shuffle.read_of(o)));
  return out;
}

int32_t StreamLayout::stream_of(size_t position) const {
  return static_cast<int32_t>(slot_of(position).stream);
}

int32_t StreamLayout::read_unit_of(size_t position) const {
  Slot slot = slot_of(position);
  slot.half = 0;  // a half's reader has read what the whole batch's has
  const Stream& s = streams_[slot.stream];
  const int64_t read = s.shuffle.reads_done(outputs_of(slot).second);
  return static_cast<int32_t>(unit_of(s, std::max<int64_t>(read - 1, 0)));
}

// The largest batches are the first ones of the largest length, in position order: a split
// one's halves are shorter, so each batch splits once.
size_t StreamLayout::split_to(size_t target) {
  int64_t largest = 0;
  for (const Stream& s : streams_) {
    if (s.batches > 0) largest = std::max(largest, std::min(s.samples, batch_size_));
  }
  if (largest < 2) return 0;
  for (size_t base = 0; base < base_ && listed_ < target; ++base) {
    if (batch_length(base_slot(base)) != largest) continue;
    split_.push_back(base);
    ++listed_;
  }
  total_ = listed_;
  return split_.size();
}

int64_t StreamLayout::pad_or_drop(size_t target) {
  if (listed_ == 0) return 0;
  const int64_t change = static_cast<int64_t>(target) - static_cast<int64_t>(listed_);
  total_ = target;
  return change;
}

size_t StreamLayout::stream_batches_before(size_t stream, size_t base) const {
  if (base >= base_) return streams_[stream].batches;
  const Slot at = base_slot(base);
  size_t n = std::min(streams_[stream].batches, at.round);
  if (streams_[stream].batches > at.round && stream < at.stream) ++n;
  return n;
}

void StreamLayout::emit_reads(size_t k, int64_t read_begin, int64_t read_end,
                              const std::function<void(size_t, int64_t, int64_t)>& emit) const {
  const Stream& s = streams_[k];
  for (size_t u = 0; u < s.ranges.size() && read_begin < read_end; ++u) {
    const int64_t unit_end = s.starts[u] + s.ranges[u].size();
    if (unit_end <= read_begin) continue;
    const int64_t to = std::min(read_end, unit_end);
    emit(k, s.ranges[u].begin + (read_begin - s.starts[u]), s.ranges[u].begin + (to - s.starts[u]));
    read_begin = to;
  }
}

void StreamLayout::emit_prefix(size_t k, int64_t end,
                               const std::function<void(size_t, int64_t, int64_t)>& emit) const {
  const Stream& s = streams_[k];
  const int64_t whole = end / s.shuffle.block() * s.shuffle.block();
  emit_reads(k, 0, whole, emit);
  for (int64_t o = whole; o < end; ++o) {
    const int64_t g = global_of(s, s.shuffle.read_of(o));
    emit(k, g, g + 1);
  }
}

size_t StreamLayout::end_slot(size_t base) const {
  const auto splits = std::upper_bound(split_.begin(), split_.end(), base) - split_.begin();
  return base + 1 + static_cast<size_t>(splits);
}

void StreamLayout::for_each_delivered(
    const SequenceSet& delivered,
    const std::function<void(size_t, int64_t, int64_t)>& emit) const {
  // The delivered prefix of positions, as the base batches all of whose slots lie in it.
  uint64_t prefix = 0;
  delivered.for_each_range([&prefix](uint64_t begin, uint64_t end) {
    if (begin == 0) prefix = end;
  });
  size_t low = 0, high = base_;  // whole bases: the most n with end_slot(n - 1) <= prefix
  while (low < high) {
    const size_t mid = low + (high - low + 1) / 2;
    if (end_slot(mid - 1) <= prefix) {
      low = mid;
    } else {
      high = mid - 1;
    }
  }
  const size_t whole = low;
  for (size_t k = 0; k < streams_.size(); ++k) {
    const auto rounds = static_cast<int64_t>(stream_batches_before(k, whole));
    emit_prefix(k, std::min(streams_[k].samples, rounds * batch_size_), emit);
  }
  // The rest one by one: positions past those bases (repeats left out).
  const size_t first_rest = whole == 0 ? 0 : end_slot(whole - 1);
  delivered.for_each_range([&](uint64_t begin, uint64_t end) {
    const uint64_t to = std::min<uint64_t>(end, listed_);
    for (uint64_t p = std::max<uint64_t>(begin, first_rest); p < to; ++p) {
      const Slot slot = slot_of(static_cast<size_t>(p));
      const Stream& s = streams_[slot.stream];
      const auto [from, until] = outputs_of(slot);
      for (int64_t o = from; o < until; ++o) {
        const int64_t g = global_of(s, s.shuffle.read_of(o));
        emit(slot.stream, g, g + 1);
      }
    }
  });
}

uint64_t StreamLayout::hash() const {
  Fnv1a h;
  h.add(std::string("stream layout"));
  h.add(static_cast<uint64_t>(batch_size_));
  h.add(static_cast<uint64_t>(drop_last_));
  for (const Stream& s : streams_) {
    h.add(static_cast<uint64_t>(s.ranges.size()));
    for (const SampleRange& r : s.ranges) {
      h.add(static_cast<uint64_t>(r.begin));
      h.add(static_cast<uint64_t>(r.end));
    }
    h.add(static_cast<uint64_t>(s.shuffle.block()));
    h.add(s.shuffle.key());
  }
  for (size_t base : split_) h.add(static_cast<uint64_t>(base));
  h.add(static_cast<uint64_t>(total_));
  return h.value();
}

}  // namespace mploader::detail
