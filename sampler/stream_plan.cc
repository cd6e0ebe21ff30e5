#include "sampler/stream_plan.h"

#include "util/splitmix.h"

#include <mploader/errors.h>

#include <algorithm>
#include <numeric>

namespace mploader::detail {
namespace {

using SplitMix = SplitMix64;

// Distinct seeds for the shard order and for each rank's streams. Each value is hashed before
// the seed so far is mixed in (mix_seed(value, so_far)): the order these plans were made in.
uint64_t order_seed(uint64_t seed, uint64_t epoch) {
  return mix_seed(0x5348, mix_seed(epoch, seed));
}
uint64_t stream_seed(uint64_t seed, uint64_t epoch, int64_t rank, int64_t stream) {
  const uint64_t for_rank = mix_seed(static_cast<uint64_t>(rank), mix_seed(epoch, seed));
  return mix_seed(static_cast<uint64_t>(stream), for_rank);
}

int64_t total_of(const std::vector<SampleRange>& ranges) {
  int64_t n = 0;
  for (const SampleRange& r : ranges) n += r.size();
  return n;
}

// The shards as ranges of global indices, each split into `pieces` near-equal ranges; empty
// ranges are left out.
std::vector<SampleRange> units_of(const std::vector<int64_t>& sizes, size_t pieces) {
  std::vector<SampleRange> units;
  int64_t start = 0;
  for (int64_t n : sizes) {
    for (size_t p = 0; p < pieces; ++p) {
      const int64_t b = start + n * static_cast<int64_t>(p) / static_cast<int64_t>(pieces);
      const int64_t e = start + n * static_cast<int64_t>(p + 1) / static_cast<int64_t>(pieces);
      if (e > b) units.push_back({b, e});
    }
    start += n;
  }
  return units;
}

// Each unit, in order, to the bin with the fewest samples so far (the lowest on a tie).
std::vector<std::vector<SampleRange>> assign_least_loaded(const std::vector<SampleRange>& units,
                                                          size_t bins) {
  std::vector<std::vector<SampleRange>> out(bins);
  std::vector<int64_t> load(bins, 0);
  for (const SampleRange& u : units) {
    const size_t b = static_cast<size_t>(std::min_element(load.begin(), load.end()) -
                                         load.begin());
    out[b].push_back(u);
    load[b] += u.size();
  }
  return out;
}

// The concatenation of `units` cut into `parts` runs of near-equal length.
std::vector<std::vector<SampleRange>> split_evenly(const std::vector<SampleRange>& units,
                                                   size_t parts) {
  std::vector<std::vector<SampleRange>> out(parts);
  const int64_t total = total_of(units);
  int64_t consumed = 0;  // samples of `units` already placed
  size_t u = 0;
  int64_t offset = 0;  // into units[u]
  for (size_t p = 0; p < parts; ++p) {
    int64_t want = total * static_cast<int64_t>(p + 1) / static_cast<int64_t>(parts) - consumed;
    consumed += want;
    while (want > 0) {
      const int64_t take = std::min(want, units[u].size() - offset);
      out[p].push_back({units[u].begin + offset, units[u].begin + offset + take});
      want -= take;
      offset += take;
      if (offset == units[u].size()) {
        ++u;
        offset = 0;
      }
    }
  }
  return out;
}

// A rank's units split into its streams: whole units when there are enough, else by ranges.
std::vector<std::vector<SampleRange>> streams_of(const std::vector<SampleRange>& units,
                                                 size_t streams) {
  if (units.size() >= streams) return assign_least_loaded(units, streams);
  return split_evenly(units, streams);
}

size_t batches_in(int64_t samples, int64_t batch_size, bool drop_last) {
  const int64_t full = samples / batch_size;
  return static_cast<size_t>(full + (!drop_last && samples % batch_size != 0 ? 1 : 0));
}

size_t batches_of_rank(const std::vector<std::vector<SampleRange>>& streams,
                       const StreamPlanSettings& s) {
  size_t n = 0;
  for (const auto& ranges : streams) n += batches_in(total_of(ranges), s.batch_size, s.drop_last);
  return n;
}

std::vector<int64_t> indices_of(const std::vector<SampleRange>& ranges) {
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(total_of(ranges)));
  for (const SampleRange& r : ranges) {
    for (int64_t i = r.begin; i < r.end; ++i) out.push_back(i);
  }
  return out;
}

// Walks a stream's ranges forward: which one holds its n-th sample, for growing n.
class UnitCursor {
 public:
  explicit UnitCursor(const std::vector<SampleRange>& ranges) : ranges_(ranges) {}
  int32_t unit_of(int64_t n) {
    while (unit_ + 1 < ranges_.size() && n >= before_ + ranges_[unit_].size()) {
      before_ += ranges_[unit_].size();
      ++unit_;
    }
    return static_cast<int32_t>(unit_);
  }

 private:
  const std::vector<SampleRange>& ranges_;
  size_t unit_ = 0;
  int64_t before_ = 0;  // samples in the ranges before unit_
};

// Every stream's samples cut into batches, the streams' batches alternating.
void cut_and_interleave(StreamEpoch& plan, const StreamPlanSettings& s, uint64_t epoch) {
  std::vector<std::vector<std::vector<int64_t>>> per_stream(plan.streams.size());
  std::vector<std::vector<int32_t>> read_units(plan.streams.size());
  size_t longest = 0;
  for (size_t k = 0; k < plan.streams.size(); ++k) {
    const std::vector<int64_t> order =
        buffer_shuffle(indices_of(plan.streams[k]), s.shuffle_buffer,
                       stream_seed(s.seed, epoch, s.rank, static_cast<int64_t>(k)));
    const size_t b = static_cast<size_t>(s.batch_size);
    UnitCursor cursor(plan.streams[k]);
    for (size_t at = 0; at < order.size(); at += b) {
      const size_t end = std::min(order.size(), at + b);
      if (end - at < b && s.drop_last) break;
      per_stream[k].emplace_back(order.begin() + at, order.begin() + end);
      // A full buffer lets out its n-th sample as it reads sample n + buffer.
      const int64_t read =
          static_cast<int64_t>(end) + (s.shuffle_buffer > 1 ? s.shuffle_buffer : 0);
      read_units[k].push_back(cursor.unit_of(std::min<int64_t>(read, order.size()) - 1));
    }
    longest = std::max(longest, per_stream[k].size());
  }
  for (size_t round = 0; round < longest; ++round) {
    for (size_t k = 0; k < per_stream.size(); ++k) {
      if (round >= per_stream[k].size()) continue;
      plan.batches.push_back(std::move(per_stream[k][round]));
      plan.stream_of_batch.push_back(static_cast<int32_t>(k));
      plan.read_unit_of_batch.push_back(read_units[k][round]);
    }
  }
}

[[noreturn]] void refuse_empty_rank(int64_t rank, const StreamPlanSettings& s, int64_t samples) {
  throw OptionError(
      "world_size",
      "mploader: rank " + std::to_string(rank) + " of " + std::to_string(s.world_size) +
          " gets no batch of this epoch (" + std::to_string(samples) + " samples over " +
          std::to_string(s.streams) + " stream(s) of batch_size " +
          std::to_string(s.batch_size) + (s.drop_last ? ", drop_last" : "") +
          "), so the ranks cannot take equal steps. Give the job more data, fewer ranks or "
          "workers, a smaller batch_size, or drop_last = false");
}

}  // namespace

std::vector<int64_t> buffer_shuffle(const std::vector<int64_t>& in, int64_t buffer,
                                    uint64_t seed) {
  if (buffer <= 1) return in;
  SplitMix rng(seed);
  const size_t capacity = static_cast<size_t>(buffer);
  std::vector<int64_t> held;
  held.reserve(std::min(capacity, in.size()));
  std::vector<int64_t> out;
  out.reserve(in.size());
  for (int64_t sample : in) {
    if (held.size() < capacity) {
      held.push_back(sample);
      continue;
    }
    // Full: one leaves at random, and the sample just read takes its place.
    const size_t j = static_cast<size_t>(rng.below(capacity));
    out.push_back(held[j]);
    held[j] = sample;
  }
  while (!held.empty()) {
    const size_t j = static_cast<size_t>(rng.below(held.size()));
    out.push_back(held[j]);
    held[j] = held.back();
    held.pop_back();
  }
  return out;
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
  const size_t nonempty = static_cast<size_t>(
      std::count_if(shard_sizes.begin(), shard_sizes.end(), [](int64_t n) { return n > 0; }));
  const size_t world = static_cast<size_t>(s.world_size);
  StreamEpoch plan;
  plan.pieces_per_shard = nonempty >= world ? 1 : (world + nonempty - 1) / nonempty;
  std::vector<SampleRange> units = units_of(shard_sizes, plan.pieces_per_shard);
  if (s.shuffle) {
    SplitMix rng(order_seed(s.seed, epoch));
    for (size_t i = units.size(); i > 1; --i) std::swap(units[i - 1], units[rng.below(i)]);
  }
  const auto ranks = assign_least_loaded(units, world);
  size_t fewest = SIZE_MAX, most = 0;
  for (size_t r = 0; r < world; ++r) {
    const size_t n = batches_of_rank(streams_of(ranks[r], static_cast<size_t>(s.streams)), s);
    if (n == 0) refuse_empty_rank(static_cast<int64_t>(r), s, total_of(ranks[r]));
    fewest = std::min(fewest, n);
    most = std::max(most, n);
  }
  plan.streams = streams_of(ranks[static_cast<size_t>(s.rank)], static_cast<size_t>(s.streams));
  cut_and_interleave(plan, s, epoch);
  plan.batches_before_evening = plan.batches.size();
  const size_t target = s.uneven == UnevenRanks::kPad ? most : fewest;
  if (plan.batches.size() > target) {
    plan.dropped_batches = plan.batches.size() - target;
    plan.batches.resize(target);
    plan.stream_of_batch.resize(target);
    plan.read_unit_of_batch.resize(target);
  }
  for (size_t i = 0; plan.batches.size() < target; ++i) {  // repeat from the epoch's start
    std::vector<int64_t> again = plan.batches[i];
    plan.batches.push_back(std::move(again));
    plan.stream_of_batch.push_back(plan.stream_of_batch[i]);
    plan.read_unit_of_batch.push_back(plan.read_unit_of_batch[i]);
    ++plan.padded_batches;
  }
  return plan;
}

}  // namespace mploader::detail
