// The epoch plan of the bucket samplers (see bucket_plan.h): order samples by bucket, cut
// batches under the budgets, even them out across ranks and assign them to steps and ranks.
// Thread-safety: pure functions; no shared state.
#include "sampler/bucket_plan.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>

namespace mploader::detail {

SplitMix64 plan_rng(uint64_t seed, uint64_t epoch, uint64_t stream) {
  return SplitMix64(mix64(mix64(mix64(seed) + epoch) + stream));
}

std::optional<std::vector<int64_t>> bucket_bounds(const std::vector<int64_t>& lengths,
                                                  double ratio, size_t max_buckets) {
  std::vector<int64_t> bounds;
  if (ratio == 1.0) {  // one bucket per distinct length (0 and 1 share one)
    for (int64_t length : lengths) bounds.push_back(std::max<int64_t>(length, 1) + 1);
    std::sort(bounds.begin(), bounds.end());
    bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
    return bounds;
  }
  const int64_t longest = lengths.empty() ? 0 : *std::max_element(lengths.begin(), lengths.end());
  int64_t b = 1;
  while (b <= longest) {
    if (bounds.size() >= max_buckets) return std::nullopt;
    const double scaled = std::ceil(static_cast<double>(b) * ratio);
    const int64_t next = scaled >= 9.0e18 ? std::numeric_limits<int64_t>::max()
                                          : std::max(b + 1, static_cast<int64_t>(scaled));
    bounds.push_back(next);
    b = next;
  }
  return bounds;
}

namespace {

// Sample indices grouped by bucket (shortest bucket first); inside a bucket in shuffled order
// (or index order without shuffle). A stable counting sort: O(n log buckets).
std::vector<int64_t> bucket_order(const PlanInput& in) {
  const std::vector<int64_t>& lengths = *in.lengths;
  const std::vector<int64_t>& bounds = *in.bounds;
  std::vector<int64_t> order(lengths.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  if (in.options->shuffle) plan_rng(in.options->seed, in.epoch, 0).shuffle(order);
  std::vector<uint32_t> bucket(lengths.size());
  std::vector<size_t> start(bounds.size() + 2, 0);
  for (size_t i = 0; i < lengths.size(); ++i) {
    bucket[i] = static_cast<uint32_t>(std::upper_bound(bounds.begin(), bounds.end(), lengths[i]) -
                                      bounds.begin());
    ++start[bucket[i] + 1];
  }
  std::partial_sum(start.begin(), start.end(), start.begin());
  std::vector<int64_t> sorted(order.size());
  for (int64_t index : order) sorted[start[bucket[index]]++] = index;
  return sorted;
}

void close_batch(BucketBatch& batch, int64_t longest, std::vector<BucketBatch>& out) {
  batch.cost = static_cast<int64_t>(batch.indices.size()) * longest;
  out.push_back(std::move(batch));
  batch = BucketBatch{};
}

// Greedy: a sample joins the open batch while both budgets hold with it and the batch's longest
// stays within bucket_ratio of its shortest (so a batch may run on into the next bucket, but
// its padding stays under 1 - 1/bucket_ratio); else it starts the next batch.
std::vector<BucketBatch> cut_batches(const std::vector<int64_t>& order, const PlanInput& in) {
  const std::vector<int64_t>& lengths = *in.lengths;
  const int64_t max_tokens = in.options->max_tokens;
  const int64_t max_size = in.options->max_batch_size;
  const double ratio = in.options->bucket_ratio;
  std::vector<BucketBatch> out;
  BucketBatch open;
  int64_t longest = 0;
  int64_t shortest = 0;
  for (int64_t index : order) {
    const int64_t length = std::max<int64_t>(lengths[index], 1);
    const int64_t size = static_cast<int64_t>(open.indices.size()) + 1;
    const int64_t longer = std::max(longest, length);
    const int64_t shorter = open.indices.empty() ? length : std::min(shortest, length);
    const bool fits = (max_size == 0 || size <= max_size) &&
                      (max_tokens == 0 || longer <= max_tokens / size) &&
                      static_cast<double>(longer) <= static_cast<double>(shorter) * ratio;
    if (!fits && !open.indices.empty()) {
      close_batch(open, longest, out);
      longest = 0;
    }
    shortest = open.indices.empty() ? length : std::min(shortest, length);
    longest = std::max(longest, length);
    open.indices.push_back(index);
    open.tokens += lengths[index];
  }
  if (!open.indices.empty()) close_batch(open, longest, out);
  return out;
}

// Pads (repeats from the start) or drops (the tail) to a multiple of the world size.
size_t even_out(std::vector<BucketBatch>& batches, const PlanInput& in, BucketEpochStats& st) {
  const size_t world = static_cast<size_t>(in.world_size);
  const size_t formed = batches.size();
  st.batches = formed;
  if (formed % world == 0) return formed / world;
  if (in.options->uneven == BucketOptions::Uneven::kPad) {
    const size_t steps = formed / world + 1;
    batches.reserve(steps * world);
    for (size_t i = 0; formed + i < steps * world; ++i) {
      batches.push_back(batches[i % formed]);
      ++st.padded_batches;
      st.padded_samples += batches.back().indices.size();
    }
    return steps;
  }
  const size_t steps = formed / world;
  for (size_t i = steps * world; i < formed; ++i) {
    ++st.dropped_batches;
    st.dropped_samples += batches[i].indices.size();
  }
  batches.resize(steps * world);
  return steps;
}

// slots[step * world + rank]. Batches sorted by cost (balance) form steps of similar cost;
// steps run in random order, the costliest first when asked.
std::vector<size_t> arrange(const std::vector<BucketBatch>& batches, size_t steps,
                            const PlanInput& in) {
  const BucketOptions& o = *in.options;
  const size_t world = static_cast<size_t>(in.world_size);
  const bool balance = o.balance_ranks && world > 1;
  std::vector<size_t> ids(batches.size());
  std::iota(ids.begin(), ids.end(), size_t{0});
  if (balance) {
    std::stable_sort(ids.begin(), ids.end(),
                     [&](size_t a, size_t b) { return batches[a].cost > batches[b].cost; });
  }
  std::vector<size_t> step_order(steps);
  std::iota(step_order.begin(), step_order.end(), size_t{0});
  if (o.shuffle) plan_rng(o.seed, in.epoch, 2).shuffle(step_order);
  if (o.costliest_first && steps > 0) {
    size_t costliest = 0;
    for (size_t p = 1; p < ids.size(); ++p) {
      if (batches[ids[p]].cost > batches[ids[costliest]].cost) costliest = p;
    }
    auto it = std::find(step_order.begin(), step_order.end(), costliest / world);
    std::rotate(step_order.begin(), it, it + 1);
  }
  SplitMix64 within = plan_rng(o.seed, in.epoch, 3);
  std::vector<size_t> slots;
  slots.reserve(ids.size());
  for (size_t step : step_order) {
    std::vector<size_t> group(ids.begin() + step * world, ids.begin() + (step + 1) * world);
    if (balance && o.shuffle) within.shuffle(group);  // no rank is always the heaviest
    slots.insert(slots.end(), group.begin(), group.end());
  }
  return slots;
}

}  // namespace

BucketEpochPlan plan_epoch(const PlanInput& in) {
  BucketEpochPlan plan;
  plan.stats.epoch = in.epoch;
  plan.batches = cut_batches(bucket_order(in), in);
  if (in.options->shuffle) plan_rng(in.options->seed, in.epoch, 1).shuffle(plan.batches);
  plan.steps = even_out(plan.batches, in, plan.stats);
  plan.stats.batches_per_rank = plan.steps;
  for (const BucketBatch& b : plan.batches) {
    plan.stats.tokens += b.tokens;
    plan.stats.padded_tokens += b.cost;
  }
  plan.slots = arrange(plan.batches, plan.steps, in);
  return plan;
}

}  // namespace mploader::detail
