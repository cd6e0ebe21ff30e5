// The jpeg workload: every .jpg/.jpeg file under a folder (searched recursively, sorted by
// path), or a set generated once from Fashion-MNIST into a cache folder.
//
// "image": float32 [3, 224, 224] (jpeg_transform.h); "label": int64, the index of the file's
// parent folder among all parent folders (as torchvision's ImageFolder), or -1 - index when
// the file cannot be read or decoded: its image is then all zeros. Runners count such samples
// (corrupt_index) and report their paths; a bad file is never fatal.
//
// get() is safe from several threads at once: each thread decodes with its own handle.
//
// Random crops and flips depend on (kAugmentSeed, epoch, index) only. A worker process reads
// the epoch from mploader::worker_info(); loading in the bench's own process (num_workers = 0,
// libtorch's threads, the in-process ideal) has no worker_info, so runners say which epoch they
// load with set_loading_epoch().
#pragma once

#include "run_config.h"

#include <mploader/dataset.h>

#include <atomic>
#include <string>
#include <vector>

namespace bench {

class JpegDataset : public mploader::Dataset {
 public:
  // Lists the files; throws UsageError when `dir` is no folder or holds no .jpg file.
  explicit JpegDataset(const std::string& dir);
  size_t size() const override { return paths_.size(); }
  // In place: decodes and crops straight into the batch (write()); get() comes from it.
  std::optional<mploader::SampleLayout> sample_layout() const override;
  void write(int64_t index, mploader::SampleWriter& out) override;
  std::optional<mploader::DatasetRecipe> recipe() const override {
    return mploader::DatasetRecipe{"bench-jpeg", dir_};
  }
  const std::string& path(int64_t index) const { return paths_.at(static_cast<size_t>(index)); }
  // The epoch get() crops for outside worker processes; threads may call get() meanwhile.
  void set_epoch(uint64_t epoch) { epoch_.store(epoch, std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> epoch_{0};
  std::string dir_;
  std::vector<std::string> paths_;
  std::vector<int64_t> labels_;
};

// Tells `data` which epoch the bench's own process loads next, when its samples depend on it
// (the jpeg workload); nothing for the other workloads. Call between epochs.
void set_loading_epoch(mploader::Dataset& data, uint64_t epoch);

// The index of the corrupt sample that `label` marks, or -1 for a good one.
inline int64_t corrupt_index(int64_t label) { return label < 0 ? -1 - label : -1; }

// The default folder of the generated set: $MPLOADER_BENCH_CACHE, else
// $XDG_CACHE_HOME/mploader-bench, else ~/.cache/mploader-bench; then "fmnist-jpeg-<count>".
std::string default_jpeg_dir(int64_t count);

// Makes `dir` hold `count` JPEGs (classes in subfolders 0-9) from Fashion-MNIST images in
// `fmnist_dir`, upscaled to 288 x 288 RGB, unless it is there already. Written into a temporary
// folder first and renamed into place, so an interrupted run leaves no half set.
void ensure_jpeg_set(const std::string& dir, const std::string& fmnist_dir, int64_t count);

}  // namespace bench
