/// @file
/// Tells the Loader where a dataset's time goes, so that LoaderStats can split the workers'
/// busy time into reading, decoding and transforms (StageTimes) and the end-of-epoch report can
/// name the slow stage. The built-in image and shard datasets report their stages; a dataset
/// of your own may too. Time it does not report counts as reading.
///
/// Costs two clock reads per timed stretch (about 40 ns): time whole decodes and transforms,
/// not single pixels.
#pragma once

#include <chrono>
#include <cstdint>

namespace mploader {

/// A part of Dataset::get() (or write()) that a dataset can time apart from its reading.
enum class DatasetStage {
  kDecode,     ///< Turning the bytes read into samples: image or audio decoding, parsing.
  kTransform,  ///< Augmentation and other transforms of decoded samples.
};

/// Adds `ns` nanoseconds to `stage` for the batch the calling thread is building. Call it from
/// the thread that runs get() or write(); outside a Loader's call it has no effect.
void record_stage_time(DatasetStage stage, uint64_t ns) noexcept;

/// Times its own life as `stage`: construct it where the stage starts, in a scope that ends
/// where it ends.
class ScopedStageTimer {
 public:
  /// Starts timing `stage`.
  explicit ScopedStageTimer(DatasetStage stage) noexcept
      : stage_(stage), start_(std::chrono::steady_clock::now()) {}
  /// Adds the time since construction to `stage` (record_stage_time()).
  ~ScopedStageTimer() {
    const auto elapsed = std::chrono::steady_clock::now() - start_;
    record_stage_time(stage_, static_cast<uint64_t>(
                                  std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed)
                                      .count()));
  }
  ScopedStageTimer(const ScopedStageTimer&) = delete;
  ScopedStageTimer& operator=(const ScopedStageTimer&) = delete;

 private:
  DatasetStage stage_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace mploader
