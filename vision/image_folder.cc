#include <mploader/vision/image_folder.h>

#include "vision/folder_scan.h"

#include <mploader/errors.h>
#include <mploader/worker_info.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
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
};

namespace {

// Reads `path` whole into `bytes`; false with `error` set (the call and errno) when it cannot.
bool read_file(const std::string& path, std::vector<uint8_t>& bytes, std::string& error) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = std::string("open: ") + std::strerror(errno) +
            (errno == ENOENT ? " (the file vanished after the folder was scanned)" : "");
    return false;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    error = std::string("fstat: ") + std::strerror(errno);
    close(fd);
    return false;
  }
  bytes.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = n < 0 ? std::string("read: ") + std::strerror(errno)
                    : "the file shrank while it was read (" + std::to_string(done) + " of " +
                          std::to_string(bytes.size()) + " bytes)";
      close(fd);
      return false;
    }
    done += static_cast<size_t>(n);
  }
  close(fd);
  if (bytes.empty()) error = "the file is empty (0 bytes)";
  return !bytes.empty();
}

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

bool ImageFolder::load(int64_t index, uint64_t seed, Decoding& d, std::string& error) {
  if (!read_file(path(index), d.file, error)) return false;
  try {
    const ImageInfo info = d.decoder.info(d.file.data(), d.file.size());
    d.plan = transform_.plan(info.width, info.height, seed);
    d.decoder.decode(d.file.data(), d.file.size(), transform_.needed_region(d.plan, info.width, info.height),
                     transform_.min_scale(d.plan), d.image);
    return true;
  } catch (const DecodeError& e) {
    error = e.what();
  } catch (const TransformError& e) {
    error = e.what();
  }
  return false;
}

void ImageFolder::write(int64_t index, SampleWriter& out) {
  std::unique_ptr<Decoding> d = take_decoding();
  ReturnOnExit on_exit{[&] { give_back(std::move(d)); }};
  const uint64_t seed = seed_of(index);
  std::string error;
  int64_t chosen = index;
  if (!load(index, seed, *d, error)) {
    if (options_.on_bad_image == OnBadImage::kRaise) {
      throw std::runtime_error("ImageFolder: cannot load " + path(index) + ": " + error +
                               " (ImageFolderOptions::on_bad_image = kSkip loads the next good "
                               "file in its place and counts the skip)");
    }
    chosen = -1;
    const auto n = static_cast<int64_t>(size());
    std::string next_error;
    for (int64_t step = 1; step <= options_.max_consecutive_bad && step < n; ++step) {
      if (load((index + step) % n, seed, *d, next_error)) {
        chosen = (index + step) % n;
        break;
      }
    }
    if (chosen < 0) {
      throw std::runtime_error("ImageFolder: cannot load " + path(index) + ": " + error +
                               "; nor any of the next " +
                               std::to_string(options_.max_consecutive_bad) +
                               " files (ImageFolderOptions::max_consecutive_bad): is the "
                               "folder readable and are these images?");
    }
    report_skipped_sample(index, chosen, path(index), error);
  }
  void* pixels = out.bytes(0);
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
