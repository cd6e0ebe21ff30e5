// StreamMixture: the sources' shards as one list, their samples through a ConcatDataset, and
// the mixture's spec, from which the Loader's stream planner draws each worker's stream.
#include "datasets/compose_recipes.h"
#include "sampler/mixture_check.h"

#include <mploader/errors.h>
#include <mploader/stream_mixture.h>

#include <algorithm>
#include <string>
#include <utility>

namespace mploader {
namespace {

const char* const kWho = "StreamMixture";

std::vector<std::shared_ptr<StreamingDataset>> checked(
    std::vector<std::shared_ptr<StreamingDataset>> sources) {
  if (sources.empty()) {
    throw OptionError("sources", "mploader: StreamMixture needs at least one source, got an "
                                 "empty list; pass the streaming datasets to mix");
  }
  for (size_t k = 0; k < sources.size(); ++k) {
    if (!sources[k]) {
      throw OptionError("sources", "mploader: StreamMixture source " + std::to_string(k) +
                                       " (of " + std::to_string(sources.size()) +
                                       ", counting from 0) is null; pass a dataset, or leave "
                                       "it out of the list");
    }
  }
  return sources;
}

std::vector<std::shared_ptr<Dataset>> as_datasets(
    const std::vector<std::shared_ptr<StreamingDataset>>& sources) {
  return {sources.begin(), sources.end()};
}

}  // namespace

StreamMixture::StreamMixture(std::vector<std::shared_ptr<StreamingDataset>> sources,
                             StreamMixtureOptions options)
    : sources_(checked(std::move(sources))),
      options_(std::move(options)),
      concat_(as_datasets(sources_), options_.source_field) {
  std::vector<size_t> sizes;
  std::vector<ShardInfo> shards;
  for (const std::shared_ptr<StreamingDataset>& source : sources_) {
    sizes.push_back(source->size());
    first_shard_.push_back(shards.size());
    spec_.source_shards.push_back(source->shards().size());
    shards.insert(shards.end(), source->shards().begin(), source->shards().end());
  }
  MixtureOptions mix;
  mix.weights = options_.weights;
  mix.end = options_.end;
  mix.num_samples = options_.num_samples;
  spec_.probabilities = detail::mixture_probabilities(sizes, mix, kWho);
  spec_.end = options_.end;
  spec_.num_samples = options_.num_samples;
  declare_shards(std::move(shards));
}

Sample StreamMixture::get(int64_t index) { return concat_.get(index); }

std::optional<SampleLayout> StreamMixture::sample_layout() const {
  return concat_.sample_layout();
}

void StreamMixture::write(int64_t index, SampleWriter& out) { concat_.write(index, out); }

void StreamMixture::write_batch(const int64_t* indices, size_t count, BatchWriter& out) {
  concat_.write_batch(indices, count, out);
}

std::optional<DatasetRecipe> StreamMixture::recipe() const {
  return detail::stream_mixture_recipe(*this);
}

std::string StreamMixture::shuffle_buffer_warning(int64_t shuffle_buffer) const {
  for (size_t k = 0; k < sources_.size(); ++k) {
    std::string warning = sources_[k]->shuffle_buffer_warning(shuffle_buffer);
    if (!warning.empty()) return "StreamMixture source " + std::to_string(k) + ": " + warning;
  }
  return {};
}

void StreamMixture::prefetch_shards(const std::vector<size_t>& shards) {
  for (size_t k = 0; k < sources_.size(); ++k) {
    const size_t first = first_shard_[k];
    const size_t end = first + spec_.source_shards[k];
    std::vector<size_t> own;
    for (size_t shard : shards) {
      if (shard >= first && shard < end) own.push_back(shard - first);
    }
    if (!own.empty()) sources_[k]->prefetch_shards(own);
  }
}

}  // namespace mploader
