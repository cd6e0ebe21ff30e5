// The epoch of a StreamMixture (include/mploader/stream_mixture.h) for one rank: each source's
// shards, in its epoch order, are cut into one run per stream of the job (ranks x workers), and
// each stream interleaves its runs by weighted draws seeded per (seed, epoch, rank, stream). A
// worker thus reads every source shard by shard, front to back, as it reads one corpus.
//
// Pure functions; every rank computes every rank's batch counts alike, with no communication.
#pragma once

#include "sampler/stream_plan.h"

#include <mploader/streaming.h>

#include <cstdint>
#include <vector>

namespace mploader::detail {

// Each source's samples in the epoch's read order, as ranges of global indices.
using SourceRanges = std::vector<std::vector<SampleRange>>;

// Source k's nonempty shards as ranges (shuffled per (seed, epoch, k) when settings.shuffle),
// for every source of `mix`. `shard_sizes` are all the mixture's shards, sources one after
// another (StreamMixSpec::source_shards).
SourceRanges mixture_sources(const std::vector<int64_t>& shard_sizes, const StreamMixSpec& mix,
                             const StreamPlanSettings& settings, uint64_t epoch);

// Plans `epoch` for settings.rank from `sources` (mixture_sources(), or what remains of them):
// one stream per worker, each drawing from its run of every source until mix.end says the
// stream is over (kFirstExhausted: all streams stop at the shortest one), then cut into
// batches and evened out across ranks as plan_stream_epoch does (settings.uneven). `resumed`:
// the rest of an epoch after a job state, where a rank one step short splits a batch instead
// of repeating one. Throws OptionError when a rank would get no batch.
StreamEpoch plan_mixed_stream_epoch(const SourceRanges& sources, const StreamMixSpec& mix,
                                    const StreamPlanSettings& settings, uint64_t epoch,
                                    bool resumed);

// What of `mix` decides an epoch's order (shards per source, probabilities, end, num_samples),
// hashed, for the fingerprints that tell a saved state of another mixture.
uint64_t stream_mix_fingerprint(const StreamMixSpec& mix);

// The samples of each source not in `delivered`, in the epoch's read order.
SourceRanges remaining_of_sources(const SourceRanges& sources, const SequenceSet& delivered);

}  // namespace mploader::detail
