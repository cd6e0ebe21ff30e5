// The tar workload: the jpeg workload's images as WebDataset tar shards, read by
// mploader::shards::TarShards (a StreamingDataset on libarchive) instead of a folder of files.
//
// The shards are packed once from the generated jpeg set (jpeg_dataset.h) into kTarShardCount
// tars in the bench cache: sample "<index>" is "<index>.jpg" (the JPEG file's bytes) and
// "<index>.cls" (its class as text), in the set's file order. --data-dir instead names a folder
// of such ".tar" files.
//
// Samples: "jpg" float32 [3, 224, 224] through the jpeg workload's transform
// (RandomResizedCrop(224), RandomHorizontalFlip(), ToTensor(), Normalize), "cls" int64.
// bench/pytorch_dataloader.py reads the same tars with the webdataset package and with
// tarfile.
#pragma once

#include <mploader/dataset.h>
#include <mploader/shards/tar_shards.h>

#include <cstdint>
#include <memory>
#include <string>

namespace bench {

// Tars the generated set is packed into: a few per worker, as WebDataset jobs have.
constexpr int kTarShardCount = 8;

// bench_cache_dir() + "/fmnist-tar-<count>": the shards of the jpeg set of `count` images.
std::string default_tar_dir(int64_t count);

// Makes `dir` hold kTarShardCount tars packed from the JPEG folder `jpeg_dir` (class folders
// 0-9, as ensure_jpeg_set() writes) unless `dir` exists. Packed into a temporary folder beside
// it and renamed into place, so an interrupted run leaves no half set. Throws
// std::runtime_error naming the file or folder and the fix.
void ensure_tar_shards(const std::string& dir, const std::string& jpeg_dir);

// The tar workload's TarShardsOptions: keys {"jpg", "cls"}, the jpeg workload's transform.
mploader::shards::TarShardsOptions tar_workload_options();

// TarShards over the ".tar" files of `dir`, keys {"jpg", "cls"}; throws UsageError naming
// --data-dir when `dir` holds no tar of such samples.
std::shared_ptr<mploader::Dataset> make_tar_dataset(const std::string& dir);

}  // namespace bench
