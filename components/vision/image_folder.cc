#include <mploader/vision/image_folder.h>

#include "vision/folder_scan.h"
#include "util/errors.h"
#include "vision/image_file.h"

#include <mploader/errors.h>
#include <mploader/loading_context.h>
#include <mploader/stage_timer.h>

#include <algorithm>
#include <new>
#include <stdexcept>

namespace mploader::vision {

// One thread's tools: the decoder's state, the file's bytes, the decoded pixels and the
// resampler's buffers, all reused from image to image so that memory stays flat over an epoch.
struct ImageFolder::Decoding {
  explicit Decoding(int64_t max_pixels) : decoder(max_pixels) {}
  ImageDecoder decoder;
  std::vector<uint8_t> file;
  RgbImage image;
  ImagePlan plan;
  RenderScratch scratch;

  // After each sample: one huge file or image does not keep its memory for the rest of the run.
  void release_large_buffers() {
    detail::release_if_large(file);
    detail::release_if_large(image.pixels);
  }
};

namespace {

// Gives a Decoding back to its dataset however write() leaves.
template <typename GiveBack>
struct ReturnOnExit {
  GiveBack give_back;
  ~ReturnOnExit() { give_back(); }
};
template <typename GiveBack>
ReturnOnExit(GiveBack) -> ReturnOnExit<GiveBack>;

}  // namespace

ImageFolder::ImageFolder(std::string root, Compose transform, ImageFolderOptions options)
    : ImageFolder(Source{std::move(root), ""}, std::move(transform), std::move(options)) {}

ImageFolder::~ImageFolder() = default;

std::shared_ptr<ImageFolder> ImageFolder::from_list(const std::string& list_file,
                                                    Compose transform,
                                                    ImageFolderOptions options) {
  return std::shared_ptr<ImageFolder>(
      new ImageFolder(Source{"", list_file}, std::move(transform), std::move(options)));
}

ImageFolder::ImageFolder(Source source, Compose transform, ImageFolderOptions options)
    : source_(std::move(source)), transform_(std::move(transform)), options_(std::move(options)) {
  if (options_.max_consecutive_bad < 1) {
    throw OptionError("max_consecutive_bad", "ImageFolderOptions::max_consecutive_bad is " +
                                                 std::to_string(options_.max_consecutive_bad) +
                                                 "; it must be at least 1");
  }
  if (options_.max_pixels < 1) {
    throw OptionError("max_pixels", "ImageFolderOptions::max_pixels is " +
                                        std::to_string(options_.max_pixels) +
                                        "; it must be at least 1");
  }
  if (options_.max_file_bytes < 1) {
    throw OptionError("max_file_bytes", "ImageFolderOptions::max_file_bytes is " +
                                            std::to_string(options_.max_file_bytes) +
                                            "; it must be at least 1");
  }
  detail::ImageList list;
  if (!source_.list_file.empty()) {
    list = detail::read_image_list(source_.list_file);
  } else if (options_.cache_file.empty()) {
    list = detail::scan_class_folders(source_.root, options_.extensions);
  } else {
    list = detail::scan_class_folders_cached(source_.root, options_.extensions,
                                             options_.cache_file);
  }
  classes_ = std::move(list.classes);
  paths_ = std::move(list.paths);
  labels_ = std::move(list.labels);
}

std::optional<SampleLayout> ImageFolder::sample_layout() const {
  const at::ScalarType pixels =
      transform_.layout() == PixelLayout::kFloat32CHW ? at::kFloat : at::kByte;
  return SampleLayout{{"image", pixels, transform_.output_shape()}, {"label", at::kLong, {}}};
}

uint64_t ImageFolder::seed_of(int64_t index) const {
  const std::optional<LoadingContext> context = loading_context();
  const uint64_t seed = options_.seed ? *options_.seed : context ? context->seed : 0;
  const uint64_t epoch = context ? context->epoch : epoch_.load(std::memory_order_relaxed);
  return sample_seed(seed, epoch, index);
}

std::string ImageFolder::missing_file_hint() const {
  if (source_.list_file.empty()) return " (the file vanished after the folder was scanned)";
  return " (the list file " + source_.list_file +
         " names a file that does not exist; correct its line or restore the file)";
}

bool ImageFolder::load(int64_t index, uint64_t seed, Decoding& d, std::string& error) {
  // Every failure here belongs to this one file (its bytes, its header, its size against the
  // transforms, even an allocation its size asks for), so kSkip can skip it.
  try {
    const ImageInfo info = detail::read_image_file(
        path(index), {options_.max_file_bytes, missing_file_hint()}, d.decoder, d.file);
    d.plan = transform_.plan(info.width, info.height, seed);
    const Rect whole{0, 0, static_cast<double>(info.width), static_cast<double>(info.height)};
    const ScopedStageTimer decoding(DatasetStage::kDecode);
    d.decoder.decode(d.file.data(), d.file.size(),
                     options_.full_decode
                         ? whole
                         : transform_.needed_region(d.plan, info.width, info.height),
                     options_.full_decode ? 1.0 : transform_.min_scale(d.plan), d.image);
    return true;
  } catch (const std::bad_alloc&) {
    error = "out of memory while loading it (std::bad_alloc)";
  } catch (const std::exception& e) {
    error = e.what();
  }
  return false;
}

int64_t ImageFolder::load_substitute(int64_t index, uint64_t seed, Decoding& d,
                                     const std::string& error) {
  const auto n = static_cast<int64_t>(size());
  const int64_t tries = std::min<int64_t>(options_.max_consecutive_bad, n - 1);
  std::string next_error;
  for (int64_t step = 1; step <= tries; ++step) {
    if (load((index + step) % n, seed, d, next_error)) return (index + step) % n;
  }
  const std::string others =
      tries == n - 1
          ? (n == 1 ? "; the dataset has no other file"
                    : "; nor any of the other " + std::to_string(tries) +
                          " files: every file of the dataset failed")
          : "; nor any of the next " + std::to_string(tries) +
                " files (ImageFolderOptions::max_consecutive_bad)";
  throw Error(mploader::detail::message("ImageFolder",
                                       "cannot load " + path(index) + ": " + error + others,
                                       "Check that the folder is readable and holds these "
                                       "images"));
}

void ImageFolder::write(int64_t index, SampleWriter& out) {
  std::unique_ptr<Decoding> d = take_decoding();
  ReturnOnExit on_exit{[&] {
    d->release_large_buffers();
    give_back(std::move(d));
  }};
  const uint64_t seed = seed_of(index);
  std::string error;
  int64_t chosen = index;
  if (!load(index, seed, *d, error)) {
    if (options_.on_bad_image == OnBadImage::kRaise) {
      throw Error(mploader::detail::message("ImageFolder",
                                           "cannot load " + path(index) + ": " + error,
                                           "Replace or remove the file; "
                                           "ImageFolderOptions::on_bad_image = kSkip loads the "
                                           "next good file in its place and counts the skip"));
    }
    chosen = load_substitute(index, seed, *d, error);
    report_skipped_sample(index, chosen, path(index), error);
  }
  void* pixels = out.bytes(0);
  const ScopedStageTimer transforming(DatasetStage::kTransform);
  transform_.render(d->image, d->plan, pixels, d->scratch);
  *out.data<int64_t>(1) = label(chosen);
}

std::unique_ptr<ImageFolder::Decoding> ImageFolder::take_decoding() {
  {
    std::lock_guard<std::mutex> lock(decodings_mutex_);
    if (!decodings_.empty()) {
      std::unique_ptr<Decoding> d = std::move(decodings_.back());
      decodings_.pop_back();
      return d;
    }
  }
  return std::make_unique<Decoding>(options_.max_pixels);
}

void ImageFolder::give_back(std::unique_ptr<Decoding> decoding) {
  std::lock_guard<std::mutex> lock(decodings_mutex_);
  decodings_.push_back(std::move(decoding));
}

}  // namespace mploader::vision
