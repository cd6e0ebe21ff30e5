// DistributedWeightedSampler: one weighted draw for the whole job, strided over the ranks.
#include "sampler/epoch_limit.h"
#include "sampler/rank_check.h"
#include "sampler/weights.h"
#include "util/fnv1a.h"

#include <mploader/distributed_sampler.h>
#include <mploader/errors.h>

#include <cstring>
#include <limits>
#include <string>

namespace mploader {
namespace {

const char* const kWho = "DistributedWeightedSampler";

int64_t default_per_rank(size_t num_weights, size_t positive, int64_t world, bool replacement) {
  const auto w = static_cast<size_t>(world);
  return static_cast<int64_t>(replacement ? (num_weights + w - 1) / w : positive / w);
}

}  // namespace

DistributedWeightedSampler::DistributedWeightedSampler(std::vector<double> weights,
                                                       int64_t world_size, int64_t rank,
                                                       int64_t num_samples, bool replacement,
                                                       uint64_t seed)
    : weights_(std::move(weights)), world_size_(world_size), rank_(rank),
      num_samples_(num_samples), replacement_(replacement), seed_(seed) {
  detail::check_rank(kWho, world_size_, rank_);
  const size_t positive = detail::check_weights(weights_, "weights", kWho);
  if (num_samples_ == 0) {
    num_samples_ = default_per_rank(weights_.size(), positive, world_size_, replacement_);
  }
  if (num_samples_ > std::numeric_limits<int64_t>::max() / world_size_) {
    throw OptionError("num_samples", std::string("mploader: ") + kWho + ": num_samples " +
                                         std::to_string(num_samples_) + " x world_size " +
                                         std::to_string(world_size_) + " overflows int64");
  }
  detail::check_draw(weights_.size(), positive, num_samples_ * world_size_, replacement_,
                     std::string(kWho) + " (num_samples x world_size = all ranks' draws)");
  weights_ = detail::summable_weights(std::move(weights_), "weights", kWho);
  // Every rank draws the whole job's indices, then keeps its stride of them.
  detail::check_epoch_length(
      static_cast<uint64_t>(num_samples_ * world_size_), "num_samples", kWho,
      "num_samples = " + std::to_string(num_samples_) + " per rank x world_size " +
          std::to_string(world_size_) + " (every rank draws all ranks' indices)",
      "draw at most " + std::to_string(detail::kMaxEpochIndices / world_size_) +
          " per rank per epoch, and run more epochs");
  // Ranks given other weights would draw other samples without a word: verify_ranks_agree
  // compares this.
  detail::Fnv1a fingerprint;
  for (double w : weights_) {
    uint64_t bits = 0;
    std::memcpy(&bits, &w, sizeof bits);
    fingerprint.add(bits);
  }
  fingerprint.add(static_cast<uint64_t>(num_samples_));
  fingerprint.add(static_cast<uint64_t>(replacement_));
  fingerprint_ = fingerprint.value();
}

int64_t DistributedWeightedSampler::rank_share(size_t, uint64_t) const { return num_samples_; }

std::vector<int64_t> DistributedWeightedSampler::indices(size_t dataset_size, uint64_t epoch) {
  check_fits(dataset_size);
  // The same draw on every rank (same weights, seed and epoch); each keeps its stride of it.
  const std::vector<int64_t> all =
      detail::multinomial_draw(weights_, num_samples_ * world_size_, replacement_, seed_ + epoch);
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(num_samples_));
  for (size_t i = static_cast<size_t>(rank_); i < all.size(); i += world_size_) {
    mine.push_back(all[i]);
  }
  return mine;
}

void DistributedWeightedSampler::check_fits(size_t dataset_size) const {
  detail::check_one_weight_per_sample(weights_.size(), dataset_size, kWho);
}

}  // namespace mploader
