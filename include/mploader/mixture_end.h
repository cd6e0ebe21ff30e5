/// @file
/// MixtureEnd: when the epoch of a mixture of sources ends, for MixtureSampler (mixture.h) and
/// StreamMixture (stream_mixture.h) alike.
#pragma once

namespace mploader {

/// When a mixture's epoch ends (MixtureOptions::end). A source "runs out" when a pass through
/// all its samples is complete; a source with weight 0 is never drawn and never counts.
enum class MixtureEnd {
  /// Exactly num_samples draws; a source that runs out starts a new pass (reshuffled). The
  /// proportions hold for the whole epoch. Torchdata's and MosaicML's way.
  kCycle,
  /// The epoch ends with the draw that completes the first pass of any source (HuggingFace's
  /// interleave_datasets "first_exhausted"): no sample comes twice in an epoch; the smallest
  /// source (relative to its weight) sets the length.
  kFirstExhausted,
  /// The epoch ends with the draw that completes the first pass of the last source to get
  /// there; sources that run out before it start a new pass (HuggingFace's "all_exhausted"):
  /// every sample comes at least once; small sources are repeated.
  kAllExhausted,
};

}  // namespace mploader
