/// @file
/// PackedShards: the shards mploader-pack writes, read by index. A map-style Dataset, so every
/// sampler works on it: DistributedSampler in PyTorch's order, weighted and subset samplers,
/// elastic resume, and BlockShuffleSampler (mploader/block_sampler.h) for object storage.
/// Part of the mploader::shards component.
///
///   shards::PackedShardsOptions o;
///   o.image_fields.emplace("image", vision::Compose({vision::RandomResizedCrop(224),
///                                                    vision::RandomHorizontalFlip(),
///                                                    vision::ToTensor()}));
///   auto data = std::make_shared<shards::PackedShards>("/data/train-packed", o);
///   LoaderOptions lo;
///   lo.sampler = std::make_shared<DistributedSampler>(world_size, rank);
///   Loader loader(data, lo);  // "image" [B, 3, 224, 224], "label" [B]
///
/// A sample is found through its shard's index (each member's offset and size in the tar), so
/// a local pack is read by offset with no tar parse. A pack named by URL (http://, https://,
/// s3://) is read with ranged requests: the samples a worker's batch needs from one shard are
/// fetched as byte ranges merged into few large requests, and each sample's bytes are checked
/// against the SHA-256 its index records. Or, with RemoteRead::kWholeShards, whole shards go
/// through the machine's shard cache (mploader/remote/remote.h): the mode for a block shuffle.
#pragma once

#include <mploader/dataset.h>
#include <mploader/remote/remote.h>
#include <mploader/vision/image.h>
#include <mploader/vision/transforms.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace mploader::shards {

/// How PackedShards reads a pack named by URL.
enum class RemoteRead {
  /// The byte ranges of the samples a batch needs, merged into large requests; nothing is kept
  /// on disk. For any order, a global shuffle included.
  kRanges,
  /// Whole shards downloaded into the shard cache and read there by offset; a process keeps
  /// the last RemoteOptions-limited few it read in use. For orders that read a shard's samples
  /// close together (BlockShuffleSampler, SequentialSampler).
  kWholeShards,
};

/// How PackedShards turns a pack's members into tensors and how it reads them.
struct PackedShardsOptions {
  /// Image fields decoded and transformed by their Compose (uint8 [H, W, 3], or float32
  /// [3, H, W] after ToTensor), random transforms seeded with the Loader's
  /// sample_seed(seed, epoch, index). An image field without one comes back as its file's bytes
  /// (a 1-D uint8 tensor).
  std::map<std::string, vision::Compose> image_fields;
  /// Images with more pixels are refused from their header.
  int64_t max_pixels = vision::kDefaultMaxPixels;
  /// Check every sample's SHA-256 on local reads too (always checked for a pack by URL).
  bool verify_local = false;
  /// A pack by URL: ranged reads or whole shards (see RemoteRead).
  RemoteRead remote_read = RemoteRead::kRanges;
  /// kRanges: two samples' ranges closer than this are fetched in one request (the bytes
  /// between are read and dropped).
  int64_t merge_gap_bytes = int64_t{1} << 20;
  /// kRanges: the most bytes one request asks for.
  int64_t max_request_bytes = int64_t{64} << 20;
  /// kWholeShards: how many shards a process keeps leased in the cache at once.
  int max_held_shards = 4;
  /// The shard cache, the S3 endpoint and credentials, timeouts and retries.
  remote::RemoteOptions remote;
};

/// A pack's samples by index (see the file comment). Thread-safe: one reader state under a lock.
class PackedShards : public Dataset {
 public:
  /// `pack`: the folder of a pack, its mploader-pack.json, or either by URL. Reads the
  /// description, and for a local pack checks each tar's size against it; indexes and tars are
  /// opened by the process that reads them. Throws OptionError naming the pack for one that is
  /// missing, not a pack, or whose description is damaged, and naming the option for an image
  /// field the pack does not have or that is not an image; mploader::Error naming the tar and
  /// both sizes for a local tar that is missing or not the size the description says.
  explicit PackedShards(std::string pack, PackedShardsOptions options = {});
  ~PackedShards() override;

  size_t size() const override;  ///< The samples of the pack.
  /// Sample `index` as the pack's fields: images decoded (PackedShardsOptions::image_fields),
  /// integers as int64 scalars, arrays as their tensors, text as text fields. Throws
  /// mploader::Error naming the shard and the sample for a shard or index that is missing, cut
  /// short, of another pack, or whose bytes do not match their SHA-256. A local index is
  /// checked against the description's SHA-256 the first time a process opens it.
  Sample get(int64_t index) override;
  /// A pack by URL with RemoteRead::kRanges: fetches the samples of `indices` that this
  /// process does not hold, as merged ranges, before their get() calls.
  void prepare_batch(const int64_t* indices, size_t count) override;
  /// Spawned workers rebuild the dataset from the location, the description and the options.
  std::optional<DatasetRecipe> recipe() const override;

  /// The fields, in order, as "name:kind" (kind image, int, npy or text).
  std::vector<std::string> fields() const;
  /// The number of shards.
  size_t num_shards() const;
  /// Each shard's sample count, in order (shards hold consecutive indices): what
  /// BlockShuffleSampler's shard_samples takes.
  std::vector<int64_t> shard_sizes() const;
  /// The shard (0-based) that holds sample `index`.
  size_t shard_of(int64_t index) const;
  /// The requests this process made for ranged reads.
  int64_t range_requests() const;
  /// The bytes this process's ranged reads brought.
  int64_t range_bytes() const;
  /// Where the pack is (as given).
  const std::string& location() const { return location_; }
  /// The options it was built with.
  const PackedShardsOptions& options() const { return options_; }

  /// Builds the dataset from recipe()'s text (internal: the factory spawned workers call).
  static std::shared_ptr<PackedShards> from_recipe(const std::string& config);

  struct Description;  ///< Internal: the parsed mploader-pack.json.

 private:
  struct Reading;      // this process's open files, cache leases, fetched samples, decoders
  PackedShards(std::string pack, std::shared_ptr<const Description> description,
               PackedShardsOptions options);

  std::string location_;
  std::shared_ptr<const Description> description_;
  PackedShardsOptions options_;
  mutable std::mutex mutex_;
  std::unique_ptr<Reading> reading_;  // GUARDED_BY(mutex_)
};

}  // namespace mploader::shards
