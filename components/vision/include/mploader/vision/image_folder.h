/// @file
/// ImageFolder: a dataset of JPEG and PNG files, decoded and transformed straight into the
/// batch's shared memory, with random augmentation that belongs to the sample.
///
///   using namespace mploader::vision;
///   ImageFolder train("/data/imagenet/train",
///                     Compose({RandomResizedCrop(224), RandomHorizontalFlip(), ToTensor(),
///                              Normalize({0.485, 0.456, 0.406}, {0.229, 0.224, 0.225})}));
///   mploader::Loader loader(train, options);  // batches of "image" [B, 3, 224, 224], "label" [B]
#pragma once

#include <mploader/dataset.h>
#include <mploader/vision/decode.h>
#include <mploader/vision/transforms.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace mploader::vision {

/// What ImageFolder does with a file it cannot load: unreadable, empty, truncated, corrupt, not
/// an image, too large, or too small for a CenterCrop.
enum class OnBadImage {
  /// Throw: the batch fails with a WorkerError naming the file and the decoder's message.
  kRaise,
  /// Load the next good file in index order in its place (wrapping around), with the bad
  /// sample's own random choices, and report the skip (mploader::report_skipped_sample): it is
  /// counted and listed, with its path and reason, in Loader::stats().
  kSkip,
};

/// How ImageFolder finds, reads and augments its files.
struct ImageFolderOptions {
  OnBadImage on_bad_image = OnBadImage::kRaise;  ///< See OnBadImage.
  /// Images with more pixels are refused from their header, before anything is allocated.
  int64_t max_pixels = kDefaultMaxPixels;
  /// Files of more bytes are refused (after their header, before the rest is read): 1 GiB by
  /// default, more than any image of max_pixels needs.
  int64_t max_file_bytes = int64_t{1} << 30;
  /// The file name endings (compared without case) that are images; others are not listed.
  std::vector<std::string> extensions = {".jpg", ".jpeg", ".png"};
  /// Seeds the random transforms with sample_seed(seed, epoch, index). Unset: the seed of the
  /// Loader that loads the dataset (LoaderOptions::seed), or 0 outside a Loader.
  std::optional<uint64_t> seed;
  /// When set, the folder scan is kept in this file and read back while no folder under the
  /// root has changed since (their modification times are stored with it). Written atomically.
  std::string cache_file;
  /// Decode every image whole and at full size, as PIL does, instead of only the rows and
  /// columns the crop needs at the smallest DCT scale (1/8, 1/4, 1/2) that keeps it sharp. The
  /// output then matches torchvision's PIL path within a level; by default a shrinking JPEG
  /// differs by a few levels on average (docs/images.md, "How it compares with torchvision").
  /// Slower: every pixel is decoded.
  bool full_decode = false;
  /// With OnBadImage::kSkip, how many files in a row may fail before the sample fails anyway
  /// (a folder of bad files should stop the job, not be skipped through).
  int max_consecutive_bad = 64;
};

/// A dataset of image files with one label each: a root folder with one subfolder per class
/// (labels are the positions of the sorted class names, as torchvision's ImageFolder gives
/// them; files are found in the subfolders' subfolders too), or a list file.
///
/// Samples are "image" (the transform's output: uint8 [H, W, 3], or float32 [3, H, W] after
/// ToTensor) and "label" (int64, a scalar). Each is decoded and resampled straight into its row
/// of the batch (Dataset::write): the decoder reads only the part of the file the crop needs,
/// at the smallest DCT scale that keeps the output sharp. Random choices depend on (seed,
/// epoch, index) alone, so batches are identical with any num_workers, any start method and
/// after a resume. Safe to call from several threads at once.
class ImageFolder : public Dataset {
 public:
  /// Lists `root`'s class folders and their images. Throws OptionError naming the folder when
  /// the root is missing or not a folder, when it holds no class folder, and when a class
  /// folder holds no image.
  ImageFolder(std::string root, Compose transform, ImageFolderOptions options = {});
  ~ImageFolder() override;

  /// A dataset from a list file: one image per line, "<path> <label>" (the label, a
  /// non-negative integer, is the line's last field; a relative path is relative to the list
  /// file's folder; empty lines and lines starting with '#' are skipped). classes() are then
  /// the labels' numbers, every one up to the largest, which must be below the number of images
  /// or 100000, whichever is larger. Throws OptionError naming the file and the line for a
  /// malformed line or a label beyond that.
  static std::shared_ptr<ImageFolder> from_list(const std::string& list_file, Compose transform,
                                                ImageFolderOptions options = {});

  size_t size() const override { return paths_.size(); }  ///< Number of images.
  /// "image" and "label", fixed by the transform: no file is read.
  std::optional<SampleLayout> sample_layout() const override;
  /// Reads, decodes and transforms image `index` into `out` (see OnBadImage for failures).
  void write(int64_t index, SampleWriter& out) override;
  /// Spawned workers rebuild the dataset from its root or list, transform and options.
  std::optional<DatasetRecipe> recipe() const override;

  /// The class names, sorted; label i is classes()[i].
  const std::vector<std::string>& classes() const { return classes_; }
  /// The path of image `index`.
  const std::string& path(int64_t index) const { return paths_.at(static_cast<size_t>(index)); }
  /// The label of image `index`.
  int64_t label(int64_t index) const { return labels_.at(static_cast<size_t>(index)); }
  /// The transform every image goes through.
  const Compose& transform() const { return transform_; }

  /// The epoch whose random choices write() makes when no Loader is calling it (libtorch's
  /// loader, a loop of your own); inside a Loader the Loader's epoch is used.
  void set_epoch(uint64_t epoch) { epoch_.store(epoch, std::memory_order_relaxed); }

  /// The recipe's parts, for the factory spawned workers call (internal).
  struct Source {
    std::string root;       ///< The root folder, or empty.
    std::string list_file;  ///< The list file, or empty.
  };

 private:
  struct Decoding;  // one thread's decoder, file buffer and scratch
  ImageFolder(Source source, Compose transform, ImageFolderOptions options);
  std::unique_ptr<Decoding> take_decoding();
  void give_back(std::unique_ptr<Decoding> decoding);
  uint64_t seed_of(int64_t index) const;
  bool load(int64_t index, uint64_t seed, Decoding& d, std::string& error);
  // The next good file after `index` (within max_consecutive_bad), loaded into `d`; throws
  // naming `index`'s `error` and how many files were tried when there is none.
  int64_t load_substitute(int64_t index, uint64_t seed, Decoding& d, const std::string& error);
  std::string missing_file_hint() const;

  Source source_;
  Compose transform_;
  ImageFolderOptions options_;
  std::vector<std::string> classes_;
  std::vector<std::string> paths_;
  std::vector<int64_t> labels_;
  std::atomic<uint64_t> epoch_{0};
  std::mutex decodings_mutex_;
  std::vector<std::unique_ptr<Decoding>> decodings_;  // GUARDED_BY(decodings_mutex_)
};

}  // namespace mploader::vision
