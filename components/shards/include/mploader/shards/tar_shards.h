/// @file
/// TarShards: a StreamingDataset over tar files in the WebDataset convention, read with
/// libarchive. Part of the mploader::shards component (CMake target mploader::shards).
///
///   using namespace mploader;
///   shards::TarShardsOptions o;
///   o.keys = {"jpg", "cls"};  // every sample must have both; other members are dropped
///   o.int_keys = {"cls"};     // "cls" holds a number as text: an int64 scalar
///   o.image_keys.emplace("jpg", vision::Compose({vision::RandomResizedCrop(224),
///                                                vision::ToTensor()}));
///   auto data = std::make_shared<shards::TarShards>(
///       shards::TarShards::from_directory("/data/train", o));
///   LoaderOptions lo;
///   lo.shuffle = true;
///   lo.shuffle_buffer = 1000;
///   Loader loader(data, lo);  // batches of "jpg" [B, 3, 224, 224] and "cls" [B]
///
/// The convention: a member's key is its path up to the first '.' of its base name (the folder
/// kept), the rest is its extension: "a/b/000123.jpg" is extension "jpg" of sample "a/b/000123",
/// "x.seg.png" is extension "seg.png" of sample "x". Consecutive members with one key form one
/// sample. Folders, links, members whose base name has no '.' and other non-file entries are
/// ignored.
#pragma once

#include <mploader/remote/remote.h>
#include <mploader/streaming.h>
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

/// What TarShards does with a sample it cannot turn into tensors: one that lacks a member of
/// TarShardsOptions::keys, an int member that is no integer, an image member that does not
/// decode or that a transform refuses. A tar that cannot be read (cut short, changed, gone)
/// always throws: a skip would hide a broken corpus.
enum class OnBadSample {
  /// Throw: the batch fails with a WorkerError naming the tar, the sample and the member.
  kRaise,
  /// Load the next good sample of the same shard (wrapping around) in its place, and report
  /// the skip (mploader::report_skipped_sample): it is counted and listed in Loader::stats().
  kSkip,
};

/// How TarShards turns members into tensors, and how much it reads ahead.
struct TarShardsOptions {
  /// The extensions a sample must have, and the only members kept, in this order. Empty: every
  /// member is kept, in the order of their extensions' names.
  std::vector<std::string> keys;
  /// Extensions whose member is a decimal integer as text ("7", " -3\n"): an int64 scalar.
  std::vector<std::string> int_keys;
  /// Extensions whose member is a JPEG or PNG file, decoded and transformed by the Compose
  /// into its output tensor (uint8 [H, W, 3], or float32 [3, H, W] after ToTensor). Random
  /// transforms are seeded with sample_seed(seed, epoch, index) of the Loader that loads the
  /// sample (mploader/worker_info.h), or sample_seed(0, 0, index) outside a Loader.
  std::map<std::string, vision::Compose> image_keys;
  /// Members of any other extension are 1-D uint8 tensors of their bytes: collate them with
  /// mploader::pad_collate(), whose "<ext>_lengths" gives each one's length.
  OnBadSample on_bad_sample = OnBadSample::kRaise;
  /// With OnBadSample::kSkip, how many samples in a row may be bad before the sample fails
  /// anyway (a shard of bad samples should stop the job, not be skipped through).
  int max_consecutive_bad = 64;
  /// Most samples a worker keeps read ahead of the one it was asked for. A Loader's shuffle
  /// buffer asks for a shard's samples out of order within its size: the samples passed over
  /// on the way to a requested one (up to this many before it) are read and kept, so that the
  /// shard is read once, front to back. Set it to at least LoaderOptions::shuffle_buffer; 0
  /// keeps nothing (a sample asked for after a later one reopens its tar).
  int64_t read_ahead = 1024;
  /// Most bytes of member data kept read ahead; the oldest samples are dropped first.
  int64_t read_ahead_bytes = int64_t{256} << 20;
  /// Images with more pixels are refused from their header (vision::ImageDecoder).
  int64_t max_pixels = vision::kDefaultMaxPixels;
  /// For shards named by URL: the shard cache, the manifest, the S3 endpoint and credentials,
  /// timeouts and retries (mploader/remote/remote.h).
  remote::RemoteOptions remote;
};

/// What the construction's scan found in one tar; a reader compares the file with it.
struct ShardScan {
  int64_t num_samples = 0;  ///< Samples counted.
  int64_t file_bytes = 0;   ///< The file's size then.
  int64_t mtime_ns = 0;     ///< Its modification time then, in nanoseconds since the epoch.
  /// A shard named by URL: the manifest's SHA-256 of it (lowercase hex), checked when it is
  /// downloaded; empty when the manifest gives none, and for a local file.
  std::string sha256;
};

/// A StreamingDataset of tar shards in the WebDataset convention (see the file comment).
///
/// The constructor reads each tar's headers once (no member data) to count its samples, and
/// closes it. get() keeps the current shard open in the calling process at its position and
/// reads forward; samples passed over are kept (TarShardsOptions::read_ahead) for the shuffle
/// buffer, and a sample behind the position that was not kept reopens the tar. Readers are
/// opened lazily in the process that calls get() (a worker), never inherited across a fork.
/// A tar that changed since the scan (size, modification time or sample count) is an error
/// naming it; size and modification time are compared with the scan's on every get(). Safe to call from several threads at once (one reader state, under a lock).
class TarShards : public StreamingDataset {
 public:
  /// Scans `tar_paths`, in this order, one shard each. An entry may be a URL (http://,
  /// https://, s3://), a URL pattern with WebDataset's brace ranges
  /// ("https://host/shard-{000000..000099}.tar"), or an s3:// prefix ending in '/' that stands
  /// for every ".tar" object under it (remote::resolve_shard_urls). A URL's size and
  /// sample count come from the manifest beside it (TarShardsOptions::remote), and readers
  /// download it into the shard cache the first time a process on the machine needs it.
  /// Throws OptionError naming the manifest for one that is missing or lacks a shard, and
  /// naming the file for
  /// an empty list, a missing or unreadable file, a file that is not a tar, a tar cut short
  /// (inside a member or on a member boundary), a damaged tar (a member's size that does not
  /// match its data), a sample with two members of one extension, one file listed twice (under
  /// any spelling) and a corpus of no sample; and naming the option for a key listed both in
  /// int_keys and image_keys.
  explicit TarShards(std::vector<std::string> tar_paths, TarShardsOptions options = {});
  ~TarShards() override;

  /// Every file of `dir` whose name ends in ".tar" (not in subfolders), in sorted order.
  /// Throws OptionError when `dir` is not a readable folder or holds no ".tar" file.
  static std::shared_ptr<TarShards> from_directory(const std::string& dir,
                                                   TarShardsOptions options = {});

  /// Sample `index` as named tensors (see TarShardsOptions for which and how). Throws
  /// mploader::Error naming the tar, the member, the sample and the fix when the tar cannot
  /// be read (cut short, changed since the scan, deleted or renamed).
  Sample get(int64_t index) override;
  /// Non-empty when `shuffle_buffer` is larger than TarShardsOptions::read_ahead: the samples
  /// the buffer asks for out of order would then reopen their tar (the Loader logs it).
  std::string shuffle_buffer_warning(int64_t shuffle_buffer) const override;
  /// Starts downloading the shards named by URL among `shards` that this process has not
  /// opened into the shard cache, in order, on a thread of this process, within
  /// TarShardsOptions::remote.prefetch_bytes (the Loader calls it in each worker). Local tars
  /// are not fetched ahead unless cache_local_paths is set.
  void prefetch_shards(const std::vector<size_t>& shards) override;
  /// Shards this process downloaded ahead of its reads.
  int64_t prefetched_shards() const;
  /// The bytes of the shards this process downloaded ahead of its reads.
  int64_t prefetched_bytes() const;
  /// Spawned workers rebuild the dataset from the paths, options and scan (no second scan).
  std::optional<DatasetRecipe> recipe() const override;

  /// The tar files, one per shard (shards()[i].name is the same path).
  const std::vector<std::string>& paths() const { return paths_; }
  /// What the construction's scan found, per shard.
  const std::vector<ShardScan>& scans() const { return scans_; }
  /// The options it was built with.
  const TarShardsOptions& options() const { return options_; }

  /// Builds the dataset from recipe()'s text (internal: the factory spawned workers call).
  static std::shared_ptr<TarShards> from_recipe(const std::string& config);

 private:
  struct Reading;  // the open readers, the read-ahead cache, the image decoder
  TarShards(std::vector<std::string> tar_paths, std::vector<ShardScan> scans,
            TarShardsOptions options);
  TarShards(std::vector<std::string> tar_paths, const TarShardsOptions& options, int);

  std::vector<std::string> paths_;
  std::vector<ShardScan> scans_;
  TarShardsOptions options_;
  mutable std::mutex mutex_;
  std::unique_ptr<Reading> reading_;  // GUARDED_BY(mutex_)
};

}  // namespace mploader::shards
