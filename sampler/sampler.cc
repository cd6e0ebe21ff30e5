#include "sampler/epoch_limit.h"
#include "util/errors.h"

#include <mploader/errors.h>

#include <mploader/sampler.h>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <numeric>
#include <stdexcept>

namespace mploader {

std::vector<int64_t> SequentialSampler::indices(size_t dataset_size, uint64_t) {
  detail::check_dataset_epoch(dataset_size, "SequentialSampler");
  std::vector<int64_t> out(dataset_size);
  std::iota(out.begin(), out.end(), int64_t{0});
  return out;
}

std::vector<int64_t> RandomSampler::indices(size_t dataset_size, uint64_t epoch) {
  detail::check_dataset_epoch(dataset_size, "RandomSampler");
  // The same generator and call PyTorch uses, so orders match torch.randperm.
  at::Generator generator = at::detail::createCPUGenerator(seed_ + epoch);
  at::Tensor perm = at::randperm(static_cast<int64_t>(dataset_size), generator, at::kLong);
  const int64_t* p = perm.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + perm.numel());
}

FixedSizeBatchSampler::FixedSizeBatchSampler(std::shared_ptr<Sampler> sampler,
                                             size_t batch_size, bool drop_last)
    : sampler_(std::move(sampler)), batch_size_(batch_size), drop_last_(drop_last) {
  if (!sampler_) {
    throw OptionError("sampler", detail::message("FixedSizeBatchSampler", "the sampler is null",
                                                 "Pass the sampler whose indices it batches"));
  }
  if (batch_size_ == 0) {
    throw OptionError("batch_size", detail::message("FixedSizeBatchSampler", "batch_size is 0",
                                                    "Give a batch size of 1 or more"));
  }
}

std::vector<std::vector<int64_t>> FixedSizeBatchSampler::batches(size_t dataset_size,
                                                                 uint64_t epoch) {
  std::vector<int64_t> order = sampler_->indices(dataset_size, epoch);
  std::vector<std::vector<int64_t>> out;
  out.reserve(order.size() / batch_size_ + 1);
  for (size_t start = 0; start < order.size(); start += batch_size_) {
    const size_t end = std::min(order.size(), start + batch_size_);
    if (end - start < batch_size_ && drop_last_) break;
    out.emplace_back(order.begin() + start, order.begin() + end);
  }
  return out;
}

}  // namespace mploader
