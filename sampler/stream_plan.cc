#include "sampler/stream_plan.h"

#include "sampler/block_shuffle.h"
#include "sampler/elastic_plan.h"
#include "util/fnv1a.h"
#include "util/splitmix.h"

#include <mploader/errors.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <utility>

namespace mploader::detail {
namespace {

using SplitMix = SplitMix64;

// Distinct seeds for the shard order and for each rank's streams. Each value is hashed before
// the seed so far is mixed in (mix_seed(value, so_far)): the order these plans were made in.
uint64_t order_seed(uint64_t seed, uint64_t epoch) {
  return mix_seed(0x5348, mix_seed(epoch, seed));
}

// The epoch's nonempty shards as whole units, shuffled per (seed, epoch) when asked.
std::vector<SampleRange> shard_units(const std::vector<int64_t>& sizes,
                                     const StreamPlanSettings& s, uint64_t epoch) {
  std::vector<SampleRange> units;
  int64_t start = 0;
  for (int64_t n : sizes) {
    if (n > 0) units.push_back({start, start + n});
    start += n;
  }
  if (s.shuffle) {
    SplitMix rng(order_seed(s.seed, epoch));
    for (size_t i = units.size(); i > 1; --i) std::swap(units[i - 1], units[rng.below(i)]);
  }
  return units;
}

// A rank's samples split into its streams in whole batches: every stream but the last holds a
// multiple of batch_size, so the rank ends with one short batch at most, whatever its split.
std::vector<std::vector<SampleRange>> streams_of_rank(const std::vector<SampleRange>& ranges,
                                                      const StreamPlanSettings& s) {
  const int64_t n = total_of(ranges);
  const int64_t cuts = (n + s.batch_size - 1) / s.batch_size;
  std::vector<std::vector<SampleRange>> out;
  for (int64_t k = 0; k < s.streams; ++k) {
    const int64_t from = std::min(n, cuts * k / s.streams * s.batch_size);
    const int64_t to = std::min(n, cuts * (k + 1) / s.streams * s.batch_size);
    out.push_back(slice_ranges(ranges, from, to));
  }
  return out;
}

[[noreturn]] void refuse_empty_rank(int64_t rank, const StreamPlanSettings& s, int64_t samples) {
  throw OptionError(
      "world_size",
      "mploader: rank " + std::to_string(rank) + " of " + std::to_string(s.world_size) +
          " gets no batch of this epoch (" + std::to_string(samples) + " samples, batch_size " +
          std::to_string(s.batch_size) + (s.drop_last ? ", drop_last" : "") +
          "), so the ranks cannot take equal steps. Give the job more data, fewer ranks, a "
          "smaller batch_size, or drop_last = false");
}

// This rank's share of `units` (in read order), in streams, cut into interleaved batches; the
// batch counts of the fewest- and most-served ranks alongside.
StreamEpoch plan_units(const std::vector<SampleRange>& units, const StreamPlanSettings& s,
                       uint64_t epoch) {
  const int64_t total = total_of(units);
  StreamEpoch plan;
  plan.fewest_batches = SIZE_MAX;
  for (int64_t r = 0; r < s.world_size; ++r) {
    const auto [from, to] = even_share(total, s.world_size, r);
    const size_t n = batches_in(to - from, s.batch_size, s.drop_last);
    plan.fewest_batches = std::min(plan.fewest_batches, n);
    plan.most_batches = std::max(plan.most_batches, n);
  }
  const auto [from, to] = even_share(total, s.world_size, s.rank);
  plan.streams = streams_of_rank(slice_ranges(units, from, to), s);
  std::vector<uint64_t> keys;
  for (size_t k = 0; k < plan.streams.size(); ++k) {
    keys.push_back(stream_shuffle_key(s.seed, epoch, s.rank, static_cast<int64_t>(k)));
  }
  plan.layout = std::make_shared<StreamLayout>(plan.streams, s.batch_size, s.drop_last,
                                               s.shuffle_buffer, keys);
  plan.batches_before_evening = plan.layout->own_batches();
  return plan;
}

}  // namespace

uint64_t stream_shuffle_key(uint64_t seed, uint64_t epoch, int64_t rank, int64_t stream) {
  const uint64_t for_rank = mix_seed(static_cast<uint64_t>(rank), mix_seed(epoch, seed));
  return mix_seed(static_cast<uint64_t>(stream), for_rank);
}

int64_t total_of(const std::vector<SampleRange>& ranges) {
  int64_t n = 0;
  for (const SampleRange& r : ranges) n += r.size();
  return n;
}

// The samples at offsets [from, to) of the concatenation of `units`, as ranges.
std::vector<SampleRange> slice_ranges(const std::vector<SampleRange>& units, int64_t from,
                                      int64_t to) {
  std::vector<SampleRange> out;
  int64_t before = 0;  // samples in the units before this one
  for (const SampleRange& u : units) {
    const int64_t b = std::max(from, before);
    const int64_t e = std::min(to, before + u.size());
    if (e > b) out.push_back({u.begin + (b - before), u.begin + (e - before)});
    before += u.size();
    if (before >= to) break;
  }
  return out;
}

size_t batches_in(int64_t samples, int64_t batch_size, bool drop_last) {
  const int64_t full = samples / batch_size;
  return static_cast<size_t>(full + (!drop_last && samples % batch_size != 0 ? 1 : 0));
}

// Repeats batches from the epoch's start (kPad) or leaves the last out (kDrop) until `target`.
void pad_or_drop(StreamEpoch& plan, size_t target) {
  if (plan.layout) {
    const int64_t change = plan.layout->pad_or_drop(target);
    (change > 0 ? plan.padded_batches : plan.dropped_batches) +=
        static_cast<size_t>(change > 0 ? change : -change);
    return;
  }
  StreamEpoch::Listed& l = plan.listed;
  if (l.batches.size() > target) {
    plan.dropped_batches = l.batches.size() - target;
    l.batches.resize(target);
    l.stream_of_batch.resize(target);
    l.read_unit_of_batch.resize(target);
  }
  for (size_t i = 0; l.batches.size() < target; ++i) {
    std::vector<int64_t> again = l.batches[i];
    l.batches.push_back(std::move(again));
    l.stream_of_batch.push_back(l.stream_of_batch[i]);
    l.read_unit_of_batch.push_back(l.read_unit_of_batch[i]);
    ++plan.padded_batches;
  }
}

// Splits the largest batches in two, each half in its stream's place, until there are
// `target`: the rank takes as many steps as the others with every sample still once. A batch
// of one sample cannot split; pad_or_drop() then repeats.
void split_to(StreamEpoch& plan, size_t target) {
  if (plan.layout) {
    plan.split_batches = plan.layout->split_to(target);
  } else {
    StreamEpoch::Listed& l = plan.listed;
    plan.split_batches = split_until(l.batches, target, [&l](size_t b) {
      const auto after = static_cast<ptrdiff_t>(b + 1);
      l.stream_of_batch.insert(l.stream_of_batch.begin() + after, l.stream_of_batch[b]);
      l.read_unit_of_batch.insert(l.read_unit_of_batch.begin() + after,
                                  l.read_unit_of_batch[b]);
    });
  }
  pad_or_drop(plan, target);
}

void cut_and_interleave(StreamEpoch& plan, std::vector<StreamReads> reads,
                        const StreamPlanSettings& s, uint64_t epoch) {
  std::vector<std::vector<std::vector<int64_t>>> per_stream(reads.size());
  std::vector<std::vector<int32_t>> read_units(reads.size());
  size_t longest = 0;
  const size_t b = static_cast<size_t>(s.batch_size);
  for (size_t k = 0; k < reads.size(); ++k) {
    const std::vector<int32_t>& reached = reads[k].unit_reached;
    const std::vector<int64_t> order =
        block_shuffle(reads[k].order, s.shuffle_buffer,
                      stream_shuffle_key(s.seed, epoch, s.rank, static_cast<int64_t>(k)));
    const BlockShuffle blocks(static_cast<int64_t>(order.size()), s.shuffle_buffer, 0);
    for (size_t at = 0; at < order.size(); at += b) {
      const size_t end = std::min(order.size(), at + b);
      if (end - at < b && s.drop_last) break;
      per_stream[k].emplace_back(order.begin() + at, order.begin() + end);
      // The reader has read the block of the batch's last sample through.
      const auto read = static_cast<size_t>(blocks.reads_done(static_cast<int64_t>(end)));
      read_units[k].push_back(reached[read - 1]);
    }
    longest = std::max(longest, per_stream[k].size());
  }
  for (size_t round = 0; round < longest; ++round) {
    for (size_t k = 0; k < per_stream.size(); ++k) {
      if (round >= per_stream[k].size()) continue;
      plan.listed.batches.push_back(std::move(per_stream[k][round]));
      plan.listed.stream_of_batch.push_back(static_cast<int32_t>(k));
      plan.listed.read_unit_of_batch.push_back(read_units[k][round]);
    }
  }
}

StreamEpoch plan_stream_epoch(const std::vector<int64_t>& shard_sizes,
                              const StreamPlanSettings& s, uint64_t epoch) {
  const int64_t total = std::accumulate(shard_sizes.begin(), shard_sizes.end(), int64_t{0});
  if (total < s.world_size) {
    throw OptionError("world_size", "mploader: the streaming dataset holds " +
                                        std::to_string(total) + " samples, fewer than the " +
                                        std::to_string(s.world_size) +
                                        " ranks of the job; every rank needs samples");
  }
  StreamEpoch plan = plan_units(shard_units(shard_sizes, s, epoch), s, epoch);
  if (plan.fewest_batches == 0) {
    for (int64_t r = 0; r < s.world_size; ++r) {
      const auto [from, to] = even_share(total, s.world_size, r);
      if (batches_in(to - from, s.batch_size, s.drop_last) == 0) refuse_empty_rank(r, s, to - from);
    }
  }
  pad_or_drop(plan, s.uneven == UnevenRanks::kPad ? plan.most_batches : plan.fewest_batches);
  return plan;
}

std::vector<SampleRange> remaining_in_read_order(const std::vector<int64_t>& shard_sizes,
                                                 const StreamPlanSettings& s, uint64_t epoch,
                                                 const SequenceSet& delivered) {
  const std::vector<SequenceSet::Range> done = delivered.ranges();
  std::vector<SampleRange> out;
  for (const SampleRange& shard : shard_units(shard_sizes, s, epoch)) {
    append_not_delivered(shard, done, out);
  }
  return out;
}

void append_not_delivered(const SampleRange& unit, const std::vector<SequenceSet::Range>& done,
                          std::vector<SampleRange>& out) {
  // The first delivered range that ends past the unit's start, then each one within it.
  auto it = std::upper_bound(done.begin(), done.end(), static_cast<uint64_t>(unit.begin),
                             [](uint64_t v, const SequenceSet::Range& r) { return v < r.second; });
  int64_t at = unit.begin;
  for (; it != done.end() && static_cast<int64_t>(it->first) < unit.end; ++it) {
    const auto begin = static_cast<int64_t>(it->first);
    if (begin > at) out.push_back({at, begin});
    at = std::max(at, static_cast<int64_t>(it->second));
  }
  if (at < unit.end) out.push_back({at, unit.end});
}

StreamEpoch plan_resumed_stream_epoch(const std::vector<SampleRange>& remaining,
                                      const StreamPlanSettings& s, uint64_t epoch) {
  const int64_t total = total_of(remaining);
  if (total > 0 && total < s.world_size) {
    throw OptionError("world_size",
                      "mploader: " + std::to_string(total) + " samples of epoch " +
                          std::to_string(epoch) + " remain, fewer than the " +
                          std::to_string(s.world_size) + " ranks resuming it; resume on at most " +
                          std::to_string(total) + " ranks, or start epoch " +
                          std::to_string(epoch + 1) + " with set_epoch()");
  }
  StreamEpoch plan = plan_units(remaining, s, epoch);
  // drop_last: the short batches go, as in a fresh epoch; else the ranks short of a step split
  // a batch, so that no sample comes twice.
  split_to(plan, s.drop_last ? plan.fewest_batches : plan.most_batches);
  return plan;
}

}  // namespace mploader::detail
