// The jpeg workload: an ImageFolder (mploader::vision) over a folder of class subfolders of
// JPEG/PNG files, or a set generated once from Fashion-MNIST into a cache folder.
//
// "image": float32 [3, 224, 224], torchvision's ImageNet training transform
// (RandomResizedCrop(224), RandomHorizontalFlip(), ToTensor(), Normalize(ImageNet mean, std));
// "label": int64, the class folder's index. A file that cannot be loaded is replaced by the next
// good one (OnBadImage::kSkip); the mploader runners report those from Loader::stats().
//
// Random crops and flips depend on (seed 0, epoch, index) only. Inside a Loader the epoch is the
// Loader's; loading in the bench's own process (libtorch's threads, the in-process ideal, the
// limit) has no Loader, so runners say which epoch they load with set_loading_epoch().
#pragma once

#include <mploader/dataset.h>

#include <memory>
#include <string>

namespace bench {

// The ImageFolder of `dir`; throws UsageError when `dir` is no folder of class folders.
std::shared_ptr<mploader::Dataset> make_jpeg_dataset(const std::string& dir);

// The path of sample `index` of a dataset make_jpeg_dataset() made.
std::string jpeg_path(const mploader::Dataset& data, int64_t index);

// Tells `data` which epoch the bench's own process loads next, when its samples depend on it
// (the jpeg workload); nothing for the other workloads. Call between epochs.
void set_loading_epoch(mploader::Dataset& data, uint64_t epoch);

// The folder of the bench's generated data: $MPLOADER_BENCH_CACHE, else
// $XDG_CACHE_HOME/mploader-bench, else ~/.cache/mploader-bench.
std::string bench_cache_dir();

// The default folder of the generated set: bench_cache_dir() + "/fmnist-jpeg-<count>".
std::string default_jpeg_dir(int64_t count);

// Makes `dir` hold `count` JPEGs (classes in subfolders 0-9) from Fashion-MNIST images in
// `fmnist_dir`, upscaled to 288 x 288 RGB, unless it is there already. Written into a temporary
// folder first and renamed into place, so an interrupted run leaves no half set.
void ensure_jpeg_set(const std::string& dir, const std::string& fmnist_dir, int64_t count);

}  // namespace bench
