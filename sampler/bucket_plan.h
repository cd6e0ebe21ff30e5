// sampler/: which indices each batch, epoch and rank gets.
//
// The epoch plan behind BucketBatchSampler and DistributedBucketSampler: length buckets,
// greedy batches under the budgets, padding or dropping to a multiple of the world size, and the
// assignment of batches to (step, rank). Pure functions of their inputs, so every rank that
// gets the same lengths, options, seed and epoch computes the same plan; nothing here depends
// on the platform's floating point beyond one correctly rounded multiplication per bucket bound.
// Thread-safety: no shared state; a plan_rng() generator is used by one thread.
#pragma once

#include "util/splitmix.h"

#include <mploader/bucket_sampler.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace mploader::detail {

// The generator of one part of an epoch's plan (`stream` 0 to 3): splitmix64 seeded from
// (seed, epoch, stream), the same sequence and shuffles with any compiler and standard library.
SplitMix64 plan_rng(uint64_t seed, uint64_t epoch, uint64_t stream);

// Upper (exclusive) bounds of the length buckets for `lengths` (see BucketOptions::
// bucket_ratio). Bucket k holds [bounds[k-1], bounds[k]), bucket 0 the lengths below bounds[0]
// (0 and 1 at least). Ratio 1: one bucket per distinct length. nullopt when more than
// max_buckets would be needed (a ratio too close to 1 for such long samples).
std::optional<std::vector<int64_t>> bucket_bounds(const std::vector<int64_t>& lengths,
                                                  double ratio, size_t max_buckets);

// One batch of the plan. cost = size x longest (a length of 0 counts as 1).
struct BucketBatch {
  std::vector<int64_t> indices;
  int64_t tokens = 0;
  int64_t cost = 0;
};

struct BucketEpochPlan {
  // The epoch's batches after padding (repeats appended) or dropping.
  std::vector<BucketBatch> batches;
  // slots[step * world_size + rank]: the batch (into `batches`) that rank takes at that step.
  std::vector<size_t> slots;
  size_t steps = 0;
  BucketEpochStats stats;  // all but rank_samples
};

struct PlanInput {
  const std::vector<int64_t>* lengths = nullptr;
  const std::vector<int64_t>* bounds = nullptr;
  const BucketOptions* options = nullptr;
  uint64_t epoch = 0;
  int64_t world_size = 1;
};

BucketEpochPlan plan_epoch(const PlanInput& input);

}  // namespace mploader::detail
