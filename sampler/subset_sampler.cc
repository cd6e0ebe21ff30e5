// SubsetSampler and SubsetRandomSampler: a fixed list of indices, in order or permuted per epoch
// as torch.utils.data.SubsetRandomSampler permutes it.
#include <mploader/errors.h>
#include <mploader/sampler.h>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <string>

namespace mploader {
namespace {

void check_non_negative(const std::vector<int64_t>& indices, const char* who) {
  for (size_t i = 0; i < indices.size(); ++i) {
    if (indices[i] >= 0) continue;
    throw OptionError("indices", std::string("mploader: ") + who + ": indices[" +
                                     std::to_string(i) + "] is " + std::to_string(indices[i]) +
                                     "; dataset indices start at 0 (negative indices do not "
                                     "count from the end here)");
  }
}

void check_in_range(const std::vector<int64_t>& indices, size_t dataset_size, const char* who) {
  for (size_t i = 0; i < indices.size(); ++i) {
    if (static_cast<uint64_t>(indices[i]) < dataset_size) continue;
    throw OptionError("indices", std::string("mploader: ") + who + ": indices[" +
                                     std::to_string(i) + "] is " + std::to_string(indices[i]) +
                                     ", outside a dataset of " + std::to_string(dataset_size) +
                                     " samples (valid: 0 to " +
                                     std::to_string(static_cast<int64_t>(dataset_size) - 1) +
                                     "); the indices are for another dataset");
  }
}

}  // namespace

SubsetSampler::SubsetSampler(std::vector<int64_t> indices) : indices_(std::move(indices)) {
  check_non_negative(indices_, "SubsetSampler");
}

std::vector<int64_t> SubsetSampler::indices(size_t dataset_size, uint64_t) {
  check_fits(dataset_size);
  return indices_;
}

void SubsetSampler::check_fits(size_t dataset_size) const {
  check_in_range(indices_, dataset_size, "SubsetSampler");
}

SubsetRandomSampler::SubsetRandomSampler(std::vector<int64_t> indices, uint64_t seed)
    : indices_(std::move(indices)), seed_(seed) {
  check_non_negative(indices_, "SubsetRandomSampler");
}

std::vector<int64_t> SubsetRandomSampler::indices(size_t dataset_size, uint64_t epoch) {
  check_fits(dataset_size);
  // PyTorch: (indices[i] for i in torch.randperm(len(indices), generator=g)).
  at::Generator generator = at::detail::createCPUGenerator(seed_ + epoch);
  const at::Tensor perm =
      at::randperm(static_cast<int64_t>(indices_.size()), generator, at::kLong);
  const int64_t* p = perm.data_ptr<int64_t>();
  std::vector<int64_t> out(indices_.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = indices_[static_cast<size_t>(p[i])];
  return out;
}

void SubsetRandomSampler::check_fits(size_t dataset_size) const {
  check_in_range(indices_, dataset_size, "SubsetRandomSampler");
}

}  // namespace mploader
