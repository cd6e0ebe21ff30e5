// DistributedSampler: torch.utils.data.DistributedSampler's order, index for index (PyTorch
// 1.13, torch/utils/data/distributed.py): randperm with a generator seeded seed + epoch, padding
// by repetition or trimming to a multiple of the world size, then every world_size-th index.
// Thread-safety: indices() only reads the sampler; concurrent calls are safe.
#include "sampler/epoch_limit.h"
#include "sampler/rank_check.h"
#include "util/splitmix.h"

#include <mploader/distributed_sampler.h>
#include <mploader/errors.h>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <numeric>
#include <string>

namespace mploader {

DistributedSampler::DistributedSampler(int64_t world_size, int64_t rank, bool shuffle,
                                       uint64_t seed, bool drop_last)
    : world_size_(world_size), rank_(rank), shuffle_(shuffle), seed_(seed),
      drop_last_(drop_last) {
  detail::check_rank("DistributedSampler", world_size_, rank_);
}

size_t DistributedSampler::num_samples(size_t dataset_size) const {
  const size_t world = static_cast<size_t>(world_size_);
  // PyTorch: ceil((n - world) / world) when dropping an uneven tail, which is floor(n / world).
  if (drop_last_ && dataset_size % world != 0) return dataset_size / world;
  return (dataset_size + world - 1) / world;
}

GlobalOrder DistributedSampler::global_order(size_t dataset_size, uint64_t epoch) const {
  detail::check_dataset_epoch(dataset_size, "DistributedSampler");  // every rank holds it all
  GlobalOrder order;
  order.indices.resize(dataset_size);
  if (shuffle_) {
    at::Generator generator = at::detail::createCPUGenerator(seed_ + epoch);
    at::Tensor perm = at::randperm(static_cast<int64_t>(dataset_size), generator, at::kLong);
    const int64_t* p = perm.data_ptr<int64_t>();
    std::copy(p, p + dataset_size, order.indices.begin());
  } else {
    std::iota(order.indices.begin(), order.indices.end(), int64_t{0});
  }
  return order;
}

std::vector<int64_t> DistributedSampler::rank_positions(size_t dataset_size, uint64_t) const {
  const size_t world = static_cast<size_t>(world_size_);
  const size_t total = num_samples(dataset_size) * world;
  // Padding repeats the order from its start, cyclically when it is longer than the order.
  std::vector<int64_t> out;
  out.reserve(total / world);
  for (size_t i = static_cast<size_t>(rank_); i < total; i += world) {
    out.push_back(static_cast<int64_t>(i % dataset_size));
  }
  return out;
}

std::vector<int64_t> DistributedSampler::indices(size_t dataset_size, uint64_t epoch) {
  const std::vector<int64_t> order = global_order(dataset_size, epoch).indices;
  std::vector<int64_t> out = rank_positions(dataset_size, epoch);
  for (int64_t& position : out) position = order[static_cast<size_t>(position)];
  return out;
}

uint64_t DistributedSampler::order_fingerprint() const {
  return detail::mix64(detail::mix64(0x6469737472696275ULL ^ seed_) ^ uint64_t{shuffle_});
}

int64_t DistributedSampler::rank_share(size_t dataset_size, uint64_t) const {
  return static_cast<int64_t>(num_samples(dataset_size));
}

}  // namespace mploader
