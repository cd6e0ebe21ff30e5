#include "sampler/stream_mix_plan.h"

#include "sampler/elastic_plan.h"
#include "sampler/mixture_check.h"
#include "util/fnv1a.h"
#include "util/splitmix.h"

#include <mploader/errors.h>

#include <algorithm>
#include <numeric>
#include <string>

namespace mploader::detail {
namespace {

// Seeds distinct from the single-corpus planner's, per purpose. Each value is hashed before the
// seed so far is mixed in, as there.
uint64_t source_order_seed(uint64_t seed, uint64_t epoch, size_t source) {
  return mix_seed(static_cast<uint64_t>(source), mix_seed(0x4d4958, mix_seed(epoch, seed)));
}
uint64_t draw_seed(uint64_t seed, uint64_t epoch, int64_t rank, int64_t stream) {
  const uint64_t for_rank = mix_seed(static_cast<uint64_t>(rank), mix_seed(epoch, seed));
  return mix_seed(0x44524157, mix_seed(static_cast<uint64_t>(stream), for_rank));
}

// One source's run in one stream, read front to back and started again when it runs out
// (kCycle, kAllExhausted).
struct RunCursor {
  std::vector<SampleRange> ranges;
  size_t range = 0;
  int64_t at = 0;  // within ranges[range]
  bool ran_out = false;  // a pass through the run is complete

  bool empty() const { return ranges.empty(); }
  // The next sample, and whether it completed a pass.
  std::pair<int64_t, bool> take() {
    const int64_t index = ranges[range].begin + at;
    bool completed = false;
    if (++at == ranges[range].size()) {
      at = 0;
      if (++range == ranges.size()) {
        range = 0;
        completed = true;
        ran_out = true;
      }
    }
    return {index, completed};
  }
};

// The probabilities of the sources a stream draws from (`drawn`), the others 0, summing to 1.
std::vector<double> drawn_probabilities(const std::vector<double>& p,
                                        const std::vector<bool>& drawn) {
  double sum = 0;
  for (size_t k = 0; k < p.size(); ++k) sum += drawn[k] ? p[k] : 0;
  std::vector<double> out(p.size());
  for (size_t k = 0; k < p.size(); ++k) out[k] = drawn[k] ? p[k] / sum : 0;
  return out;
}

// How many draws a stream makes at most: its share of mix.num_samples over every stream of the
// job (kCycle: of the sources' total when 0); none when 0 and the end is a source running out.
int64_t draw_cap(const StreamMixSpec& mix, int64_t total, int64_t streams, int64_t stream) {
  const int64_t n = mix.num_samples > 0                 ? mix.num_samples
                    : mix.end == MixtureEnd::kCycle ? total
                                                     : 0;
  if (n == 0) return -1;
  const auto [from, to] = even_share(n, streams, stream);
  return to - from;
}

// One stream's draws from its runs: the sources it draws from are those with a positive
// probability and samples in this stream (a source too small to reach every stream is left
// out of the streams it does not reach).
// `first_read` gets the ranges the stream reads, in the order it begins them (the numbering of
// StreamReads::unit_reached).
StreamReads draw_stream(std::vector<RunCursor> runs, const StreamMixSpec& mix, int64_t cap,
                        uint64_t seed, std::vector<SampleRange>& first_read) {
  std::vector<bool> drawn(runs.size());
  size_t sources = 0;
  for (size_t k = 0; k < runs.size(); ++k) {
    drawn[k] = mix.probabilities[k] > 0 && !runs[k].empty();
    sources += drawn[k] ? 1 : 0;
  }
  StreamReads out;
  if (sources == 0) return out;
  // The stream's ranges in first-read order: each run's ranges, numbered as first reached.
  std::vector<std::vector<int32_t>> unit_of(runs.size());
  for (size_t k = 0; k < runs.size(); ++k) unit_of[k].assign(runs[k].ranges.size(), -1);
  int32_t units = 0;
  int32_t reached = 0;
  size_t left_to_run_out = sources;
  const SourcePicker picker(drawn_probabilities(mix.probabilities, drawn));
  SplitMix64 rng(seed);
  while (cap < 0 || static_cast<int64_t>(out.order.size()) < cap) {
    const size_t k = picker.pick(rng.uniform());
    RunCursor& run = runs[k];
    int32_t& unit = unit_of[k][run.range];
    if (unit < 0) {
      unit = units++;
      first_read.push_back(run.ranges[run.range]);
    }
    reached = std::max(reached, unit);
    const bool first_pass = !run.ran_out;
    const auto [index, completed] = run.take();
    out.order.push_back(index);
    out.unit_reached.push_back(reached);
    if (!completed || !first_pass) continue;
    if (mix.end == MixtureEnd::kFirstExhausted) break;
    if (mix.end == MixtureEnd::kAllExhausted && --left_to_run_out == 0) break;
  }
  return out;
}

// Every stream of rank `rank`: its run of each source, drawn.
std::vector<StreamReads> rank_streams(const SourceRanges& sources, const StreamMixSpec& mix,
                                      const StreamPlanSettings& s, uint64_t epoch, int64_t rank,
                                      std::vector<std::vector<SampleRange>>* ranges) {
  const int64_t streams = s.world_size * s.streams;
  int64_t total = 0;
  for (const std::vector<SampleRange>& source : sources) total += total_of(source);
  std::vector<StreamReads> out;
  for (int64_t k = 0; k < s.streams; ++k) {
    const int64_t stream = rank * s.streams + k;
    std::vector<RunCursor> runs(sources.size());
    for (size_t j = 0; j < sources.size(); ++j) {
      const auto [from, to] = even_share(total_of(sources[j]), streams, stream);
      runs[j].ranges = slice_ranges(sources[j], from, to);
    }
    std::vector<SampleRange> first_read;
    out.push_back(draw_stream(std::move(runs), mix, draw_cap(mix, total, streams, stream),
                              draw_seed(s.seed, epoch, rank, k), first_read));
    if (ranges != nullptr) ranges->push_back(std::move(first_read));
  }
  return out;
}

// kFirstExhausted ends the job's epoch when the first of its streams has read a run through,
// as MixtureSampler's epoch ends when the first source runs out: every stream stops at the
// shortest stream's length (streams that draw nothing set aside). The ranks then take equal
// steps without a repeated sample, where streams stopping each at its own first run would leave
// ranks several batches apart for pad to repeat. -1: no cut (the other ends).
int64_t job_cut(const std::vector<std::vector<int64_t>>& lengths, const StreamMixSpec& mix) {
  if (mix.end != MixtureEnd::kFirstExhausted) return -1;
  int64_t cut = -1;
  for (const std::vector<int64_t>& rank : lengths) {
    for (int64_t n : rank) {
      if (n > 0 && (cut < 0 || n < cut)) cut = n;
    }
  }
  return cut;
}

size_t rank_batches(const std::vector<int64_t>& lengths, int64_t cut,
                    const StreamPlanSettings& s) {
  size_t n = 0;
  for (int64_t length : lengths) {
    n += batches_in(cut < 0 ? length : std::min(length, cut), s.batch_size, s.drop_last);
  }
  return n;
}

// Cuts a stream's reads at `cut`, and its ranges to those the kept reads reach.
void cut_stream(StreamReads& reads, std::vector<SampleRange>& ranges, int64_t cut) {
  if (cut < 0 || static_cast<int64_t>(reads.order.size()) <= cut) return;
  reads.order.resize(static_cast<size_t>(cut));
  reads.unit_reached.resize(static_cast<size_t>(cut));
  const size_t reached = cut == 0 ? 0 : static_cast<size_t>(reads.unit_reached.back()) + 1;
  ranges.resize(std::min(ranges.size(), reached));
}

void refuse_empty_rank(int64_t rank, const StreamPlanSettings& s, uint64_t epoch) {
  throw OptionError("world_size",
                    "mploader: rank " + std::to_string(rank) + " of " +
                        std::to_string(s.world_size) + " gets no batch of the mixture's epoch " +
                        std::to_string(epoch) + " (batch_size " + std::to_string(s.batch_size) +
                        (s.drop_last ? ", drop_last" : "") + "), so the ranks cannot take "
                        "equal steps. Give the sources more data, use fewer ranks or workers, "
                        "or a smaller batch_size");
}

}  // namespace

SourceRanges mixture_sources(const std::vector<int64_t>& shard_sizes, const StreamMixSpec& mix,
                             const StreamPlanSettings& s, uint64_t epoch) {
  SourceRanges out(mix.source_shards.size());
  size_t shard = 0;
  int64_t start = 0;
  for (size_t k = 0; k < mix.source_shards.size(); ++k) {
    for (size_t i = 0; i < mix.source_shards[k]; ++i, ++shard) {
      const int64_t n = shard_sizes.at(shard);
      if (n > 0) out[k].push_back({start, start + n});
      start += n;
    }
    if (s.shuffle) {
      SplitMix64 rng(source_order_seed(s.seed, epoch, k));
      std::vector<SampleRange>& units = out[k];
      for (size_t i = units.size(); i > 1; --i) std::swap(units[i - 1], units[rng.below(i)]);
    }
  }
  return out;
}

StreamEpoch plan_mixed_stream_epoch(const SourceRanges& sources, const StreamMixSpec& mix,
                                    const StreamPlanSettings& s, uint64_t epoch, bool resumed) {
  StreamEpoch plan;
  std::vector<StreamReads> own;
  std::vector<std::vector<int64_t>> lengths(static_cast<size_t>(s.world_size));
  for (int64_t r = 0; r < s.world_size; ++r) {
    std::vector<StreamReads> streams =
        rank_streams(sources, mix, s, epoch, r, r == s.rank ? &plan.streams : nullptr);
    for (const StreamReads& stream : streams) {
      lengths[r].push_back(static_cast<int64_t>(stream.order.size()));
    }
    if (r == s.rank) own = std::move(streams);
  }
  const int64_t cut = job_cut(lengths, mix);
  plan.fewest_batches = SIZE_MAX;
  for (int64_t r = 0; r < s.world_size; ++r) {
    const size_t n = rank_batches(lengths[r], cut, s);
    if (n == 0 && !resumed) refuse_empty_rank(r, s, epoch);
    plan.fewest_batches = std::min(plan.fewest_batches, n);
    plan.most_batches = std::max(plan.most_batches, n);
  }
  for (size_t k = 0; k < own.size(); ++k) cut_stream(own[k], plan.streams[k], cut);
  cut_and_interleave(plan, std::move(own), s, epoch);
  plan.batches_before_evening = plan.listed.batches.size();
  if (resumed) {
    split_to(plan, s.drop_last ? plan.fewest_batches : plan.most_batches);
  } else {
    pad_or_drop(plan, s.uneven == UnevenRanks::kPad ? plan.most_batches : plan.fewest_batches);
  }
  return plan;
}

uint64_t stream_mix_fingerprint(const StreamMixSpec& mix) {
  Fnv1a h;
  for (size_t n : mix.source_shards) h.add(static_cast<uint64_t>(n));
  for (double p : mix.probabilities) h.add(std::to_string(p));
  h.add(static_cast<uint64_t>(mix.end));
  h.add(static_cast<uint64_t>(mix.num_samples));
  return h.value();
}

SourceRanges remaining_of_sources(const SourceRanges& sources, const SequenceSet& delivered) {
  const std::vector<SequenceSet::Range> done = delivered.ranges();
  SourceRanges out(sources.size());
  for (size_t k = 0; k < sources.size(); ++k) {
    for (const SampleRange& range : sources[k]) append_not_delivered(range, done, out[k]);
  }
  return out;
}

}  // namespace mploader::detail
