// BucketBatchSampler and DistributedBucketSampler: argument checks, the fingerprint, this rank's
// share of the epoch plan (bucket_plan.h), and resuming from a BucketSamplerState.
// Thread-safety: one thread at a time per sampler (the plan cache is not locked).
#include "sampler/bucket_plan.h"
#include "sampler/rank_check.h"

#include <mploader/bucket_sampler.h>
#include <mploader/errors.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>

namespace mploader {
namespace {

// Beyond this a length is surely a unit mistake, and sums of lengths could overflow.
constexpr int64_t kMaxLength = int64_t{1} << 40;
// Bucket bounds are kept in memory; a ratio barely above 1 could ask for billions.
constexpr size_t kMaxBuckets = size_t{1} << 22;

void require(bool ok, const char* option, const std::string& message) {
  if (!ok) throw OptionError(option, "mploader: " + message);
}

void check_options(const BucketOptions& o) {
  require(o.max_tokens >= 0, "max_tokens",
          "BucketOptions::max_tokens is " + std::to_string(o.max_tokens) +
              "; give the most tokens per batch (padding included), or 0 for no budget");
  require(o.max_batch_size >= 0, "max_batch_size",
          "BucketOptions::max_batch_size is " + std::to_string(o.max_batch_size) +
              "; give the most samples per batch, or 0 for no limit");
  require(o.max_tokens > 0 || o.max_batch_size > 0, "max_tokens",
          "BucketOptions has neither max_tokens nor max_batch_size; set at least one, e.g. "
          "max_tokens = 16384");
  require(std::isfinite(o.bucket_ratio) && o.bucket_ratio >= 1.0 && o.bucket_ratio <= 1e6,
          "bucket_ratio",
          "BucketOptions::bucket_ratio is " + std::to_string(o.bucket_ratio) +
              "; give a ratio >= 1 between bucket bounds, e.g. 1.1 (1 = one bucket per length)");
}

void check_lengths(const std::vector<int64_t>& lengths, const BucketOptions& o) {
  size_t first_over = lengths.size(), over = 0, longest = 0;
  for (size_t i = 0; i < lengths.size(); ++i) {
    const int64_t length = lengths[i];
    require(length >= 0 && length <= kMaxLength, "lengths",
            "sample " + std::to_string(i) + " has length " + std::to_string(length) +
                "; lengths must be 0 to 2^40 (tokens, frames, ...)");
    if (length > lengths[longest]) longest = i;
    if (o.max_tokens > 0 && length > o.max_tokens) {
      if (over++ == 0) first_over = i;
    }
  }
  if (over == 0) return;
  // A sample over the budget on its own is refused rather than batched alone: a batch over
  // the budget is what the budget is there to prevent (an out-of-memory error mid-epoch).
  require(false, "lengths",
          "sample " + std::to_string(first_over) + " has length " +
              std::to_string(lengths[first_over]) + ", more than max_tokens = " +
              std::to_string(o.max_tokens) + " on its own (" + std::to_string(over) +
              " samples are; the longest, sample " + std::to_string(longest) + ", has " +
              std::to_string(lengths[longest]) + "); raise max_tokens to at least " +
              std::to_string(lengths[longest]) + ", or truncate or filter out such samples");
}

std::vector<int64_t> collect_lengths(size_t n, const std::function<int64_t(int64_t)>& length_of) {
  require(static_cast<bool>(length_of), "lengths", "the length function is empty");
  std::vector<int64_t> lengths(n);
  for (size_t i = 0; i < n; ++i) lengths[i] = length_of(static_cast<int64_t>(i));
  return lengths;
}

// Samples the longest batch can hold: few short samples under the token budget.
size_t batch_size_bound(const std::vector<int64_t>& lengths, const BucketOptions& o) {
  int64_t bound = static_cast<int64_t>(std::max<size_t>(lengths.size(), 1));
  if (o.max_batch_size > 0) bound = std::min(bound, o.max_batch_size);
  if (o.max_tokens > 0 && !lengths.empty()) {
    const int64_t shortest = std::max<int64_t>(
        *std::min_element(lengths.begin(), lengths.end()), 1);
    bound = std::min(bound, o.max_tokens / shortest);
  }
  return static_cast<size_t>(std::max<int64_t>(bound, 1));
}

uint64_t fingerprint_of(const std::vector<int64_t>& lengths, const BucketOptions& o) {
  uint64_t bits = 0;
  std::memcpy(&bits, &o.bucket_ratio, sizeof bits);
  const uint64_t fields[] = {lengths.size(),
                             static_cast<uint64_t>(o.max_tokens),
                             static_cast<uint64_t>(o.max_batch_size),
                             bits,
                             uint64_t{o.shuffle} | uint64_t{o.balance_ranks} << 1 |
                                 uint64_t{o.costliest_first} << 2 |
                                 uint64_t{o.uneven == BucketOptions::Uneven::kDrop} << 3};
  uint64_t h = 0x6D706C6F61646572ULL;  // "mploader"
  for (uint64_t f : fields) h = detail::mix64(h ^ f);
  for (int64_t length : lengths) h = detail::mix64(h ^ static_cast<uint64_t>(length));
  return h;
}

// The epoch's batches as formed and shuffled, before padding or dropping: the plan of one rank.
// Cutting and shuffling do not depend on the world size, and one rank neither pads nor drops
// (kDrop leaves the tail out of the plan of several).
std::vector<std::vector<int64_t>> formed_batches(const std::vector<int64_t>& lengths,
                                                 const std::vector<int64_t>& bounds,
                                                 const BucketOptions& options, uint64_t epoch) {
  detail::PlanInput input;
  input.lengths = &lengths;
  input.bounds = &bounds;
  input.options = &options;
  input.epoch = epoch;
  input.world_size = 1;
  detail::BucketEpochPlan one = detail::plan_epoch(input);
  std::vector<std::vector<int64_t>> out;
  for (detail::BucketBatch& b : one.batches) out.push_back(std::move(b.indices));
  return out;
}

}  // namespace

BucketBatchSampler::BucketBatchSampler(std::vector<int64_t> lengths, BucketOptions options)
    : BucketBatchSampler(std::move(lengths), options, 1, 0) {}

BucketBatchSampler::BucketBatchSampler(size_t dataset_size,
                                       const std::function<int64_t(int64_t)>& length_of,
                                       BucketOptions options)
    : BucketBatchSampler(collect_lengths(dataset_size, length_of), options, 1, 0) {}

BucketBatchSampler::BucketBatchSampler(std::vector<int64_t> lengths, BucketOptions options,
                                       int64_t world_size, int64_t rank)
    : lengths_(std::move(lengths)), options_(options), world_size_(world_size), rank_(rank) {
  detail::check_rank("DistributedBucketSampler", world_size_, rank_);
  check_options(options_);
  check_lengths(lengths_, options_);
  std::optional<std::vector<int64_t>> bounds =
      detail::bucket_bounds(lengths_, options_.bucket_ratio, kMaxBuckets);
  if (!bounds) {  // only with lengths: none needs no bucket
    require(false, "bucket_ratio",
            "BucketOptions::bucket_ratio " + std::to_string(options_.bucket_ratio) +
                " is so close to 1 that samples up to " +
                std::to_string(*std::max_element(lengths_.begin(), lengths_.end())) +
                " long need more than " + std::to_string(kMaxBuckets) +
                " buckets; use a ratio of 1.001 or more (or exactly 1 for equal lengths only)");
  }
  bucket_bounds_ = std::move(*bounds);
  max_batch_size_ = batch_size_bound(lengths_, options_);
  fingerprint_ = fingerprint_of(lengths_, options_);
  BucketOptions formed = options_;  // what forms the batches alone, not how ranks share them
  formed.balance_ranks = false;
  formed.costliest_first = false;
  formed.uneven = BucketOptions::Uneven::kPad;
  order_fingerprint_ = fingerprint_of(lengths_, formed);
}

BucketBatchSampler::~BucketBatchSampler() = default;

std::shared_ptr<const detail::BucketEpochPlan> BucketBatchSampler::plan(uint64_t epoch) const {
  if (cached_plan_ && cached_epoch_ == epoch && cached_seed_ == options_.seed) {
    return cached_plan_;
  }
  detail::PlanInput input;
  input.lengths = &lengths_;
  input.bounds = &bucket_bounds_;
  input.options = &options_;
  input.epoch = epoch;
  input.world_size = world_size_;
  cached_plan_ = std::make_shared<const detail::BucketEpochPlan>(detail::plan_epoch(input));
  cached_epoch_ = epoch;
  cached_seed_ = options_.seed;
  return cached_plan_;
}

std::vector<std::vector<int64_t>> BucketBatchSampler::batches(size_t dataset_size,
                                                              uint64_t epoch) {
  require(dataset_size == lengths_.size(), "dataset_size",
          "the bucket sampler has lengths for " + std::to_string(lengths_.size()) +
              " samples but the dataset has " + std::to_string(dataset_size) +
              "; build the sampler from this dataset's lengths");
  const std::shared_ptr<const detail::BucketEpochPlan> p = plan(epoch);
  const size_t skip = resume_ && resume_->epoch == epoch ? resume_->batches_consumed : 0;
  std::vector<std::vector<int64_t>> out;
  out.reserve(p->steps - std::min(skip, p->steps));
  for (size_t step = skip; step < p->steps; ++step) {
    const size_t slot = step * static_cast<size_t>(world_size_) + static_cast<size_t>(rank_);
    out.push_back(p->batches[p->slots[slot]].indices);
  }
  return out;
}

GlobalOrder BucketBatchSampler::global_order(size_t, uint64_t epoch) const {
  GlobalOrder order;
  for (const std::vector<int64_t>& indices :
       formed_batches(lengths_, bucket_bounds_, options_, epoch)) {
    order.indices.insert(order.indices.end(), indices.begin(), indices.end());
    order.group_ends.push_back(static_cast<int64_t>(order.indices.size()));
  }
  return order;
}

std::vector<int64_t> BucketBatchSampler::rank_positions(size_t, uint64_t epoch) const {
  const std::shared_ptr<const detail::BucketEpochPlan> p = plan(epoch);
  const std::vector<std::vector<int64_t>> formed_list =
      formed_batches(lengths_, bucket_bounds_, options_, epoch);
  const size_t formed = formed_list.size();
  std::vector<int64_t> starts(formed + 1, 0);  // of each formed batch's positions
  for (size_t b = 0; b < formed; ++b) {
    starts[b + 1] = starts[b] + static_cast<int64_t>(formed_list[b].size());
  }
  const size_t skip = resume_ && resume_->epoch == epoch ? resume_->batches_consumed : 0;
  std::vector<int64_t> out;
  for (size_t step = skip; step < p->steps; ++step) {
    const size_t slot = p->slots[step * static_cast<size_t>(world_size_) +
                                 static_cast<size_t>(rank_)];
    // Repeats (kPad) follow the formed batches and copy them from the first on.
    const size_t b = slot < formed ? slot : (slot - formed) % formed;
    for (int64_t at = starts[b]; at < starts[b + 1]; ++at) out.push_back(at);
  }
  return out;
}

uint64_t BucketBatchSampler::order_fingerprint() const {
  return detail::mix64(order_fingerprint_ ^ options_.seed);
}

BucketEpochStats BucketBatchSampler::stats(uint64_t epoch) const {
  const std::shared_ptr<const detail::BucketEpochPlan> p = plan(epoch);
  BucketEpochStats st = p->stats;
  for (size_t step = 0; step < p->steps; ++step) {
    const size_t slot = step * static_cast<size_t>(world_size_) + static_cast<size_t>(rank_);
    st.rank_samples += p->batches[p->slots[slot]].indices.size();
  }
  return st;
}

BucketSamplerState BucketBatchSampler::state_dict(uint64_t epoch,
                                                  uint64_t batches_consumed) const {
  BucketSamplerState s;
  s.epoch = epoch;
  s.seed = options_.seed;
  s.batches_consumed = batches_consumed;
  s.world_size = world_size_;
  s.fingerprint = fingerprint_;
  return s;
}

BucketSamplerState BucketBatchSampler::state_after(const Batch& batch) const {
  const uint64_t skipped =
      resume_ && resume_->epoch == batch.epoch() ? resume_->batches_consumed : 0;
  return state_dict(batch.epoch(), skipped + batch.sequence() + 1);
}

void BucketBatchSampler::load_state_dict(const BucketSamplerState& state) {
  require(state.world_size == world_size_, "state",
          "the sampler state is from a job of world size " + std::to_string(state.world_size) +
              " and this one has " + std::to_string(world_size_) +
              "; resume with the same number of ranks, or start the epoch afresh");
  require(state.fingerprint == fingerprint_, "state",
          "the sampler state was saved with other sample lengths or batching options "
          "(fingerprint " + std::to_string(state.fingerprint) + ", this sampler's " +
              std::to_string(fingerprint_) +
              "); resume with the same dataset and BucketOptions, or start afresh");
  const uint64_t seed = options_.seed;
  options_.seed = state.seed;
  const size_t steps = plan(state.epoch)->steps;
  if (state.batches_consumed > steps) {
    options_.seed = seed;
    require(false, "state",
            "the sampler state says " + std::to_string(state.batches_consumed) +
                " batches of epoch " + std::to_string(state.epoch) + " were consumed, but " +
                "each rank has only " + std::to_string(steps) + " in that epoch");
  }
  resume_ = state;
}

DistributedBucketSampler::DistributedBucketSampler(std::vector<int64_t> lengths,
                                                   BucketOptions options, int64_t world_size,
                                                   int64_t rank)
    : BucketBatchSampler(std::move(lengths), options, world_size, rank) {}

DistributedBucketSampler::DistributedBucketSampler(
    size_t dataset_size, const std::function<int64_t(int64_t)>& length_of, BucketOptions options,
    int64_t world_size, int64_t rank)
    : BucketBatchSampler(collect_lengths(dataset_size, length_of), options, world_size, rank) {}

int64_t BucketBatchSampler::rank_share(size_t, uint64_t epoch) const {
  return static_cast<int64_t>(stats(epoch).batches_per_rank);
}

}  // namespace mploader
