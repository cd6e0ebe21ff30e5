// StreamEpoch's accessors (stream_plan.h): a computed epoch asks its layout, a listed one reads
// its lists.
#include "sampler/stream_plan.h"

#include "util/fnv1a.h"

#include <stdexcept>

namespace mploader::detail {

std::vector<int64_t> StreamEpoch::batch(size_t position) const {
  return layout ? layout->batch(position) : listed.batches.at(position);
}

int32_t StreamEpoch::stream_of(size_t position) const {
  return layout ? layout->stream_of(position) : listed.stream_of_batch.at(position);
}

int32_t StreamEpoch::read_unit_of(size_t position) const {
  return layout ? layout->read_unit_of(position) : listed.read_unit_of_batch.at(position);
}

void StreamEpoch::for_each_delivered(
    const SequenceSet& delivered,
    const std::function<void(size_t, int64_t, int64_t)>& emit) const {
  if (layout) {
    layout->for_each_delivered(delivered, emit);
    return;
  }
  // Repeated (padded) batches come after the rank's own, split ones included.
  const uint64_t own = batches_before_evening + split_batches;
  delivered.for_each_range([&](uint64_t begin, uint64_t end) {
    for (uint64_t b = begin; b < end && b < own && b < listed.batches.size(); ++b) {
      const auto stream = static_cast<size_t>(listed.stream_of_batch[b]);
      for (int64_t index : listed.batches[b]) emit(stream, index, index + 1);
    }
  });
}

uint64_t StreamEpoch::hash() const {
  if (layout) return layout->hash();
  Fnv1a h;
  h.add(static_cast<uint64_t>(listed.batches.size()));
  for (const std::vector<int64_t>& batch : listed.batches) {
    h.add(static_cast<uint64_t>(batch.size()));
    for (int64_t index : batch) h.add(static_cast<uint64_t>(index));
  }
  return h.value();
}

}  // namespace mploader::detail
