// mploader-pack's inputs (pack_sources.h).
#include "pack_sources.h"

#include "shards/npy_member.h"

#include "util/errors.h"

#include <mploader/errors.h>
#include <mploader/vision/decode.h>
#include <mploader/vision/encode.h>
#include <mploader/vision/image_folder.h>
#include <mploader/vision/transforms.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

namespace mploader::pack {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(mploader::detail::message("mploader-pack", "cannot read " +
                                              mploader::detail::in_quotes(path) + " (" +
                                              std::strerror(errno) + ")",
                                          "Check the file; the pack resumes when run again"));
  }
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The longer side shrunk to at most `max_side`, the aspect ratio kept (sides at least 1).
vision::Size2 bounded(int width, int height, int max_side) {
  const int longer = std::max(width, height);
  if (longer <= max_side) return {height, width};
  const double scale = static_cast<double>(max_side) / longer;
  return {std::max(1, static_cast<int>(std::lround(height * scale))),
          std::max(1, static_cast<int>(std::lround(width * scale)))};
}

class ImageSource : public Dataset {
 public:
  ImageSource(std::shared_ptr<vision::ImageFolder> folder, ImageEncoding encoding)
      : folder_(std::move(folder)), encoding_(encoding) {}
  size_t size() const override { return folder_->size(); }

  Sample get(int64_t index) override {
    const std::string& path = folder_->path(index);
    std::string bytes = read_file(path);
    Sample s;
    s.set_text("image:image", encoding_.copy ? std::move(bytes) : encode(bytes, path));
    s.set_text("int:label", std::to_string(folder_->label(index)));
    return s;
  }

 private:
  std::string encode(const std::string& file, const std::string& path) {
    const auto* data = reinterpret_cast<const uint8_t*>(file.data());
    try {
      const vision::ImageInfo info = decoder_.info(data, file.size());
      const vision::Size2 out = bounded(info.width, info.height, encoding_.max_side);
      const vision::Compose resize({vision::Resize(out)});
      const vision::ImagePlan plan = resize.plan(info.width, info.height, 0);
      decoder_.decode(data, file.size(), resize.needed_region(plan, info.width, info.height),
                      resize.min_scale(plan), image_);
      pixels_.resize(resize.output_bytes());
      resize.render(image_, plan, pixels_.data(), scratch_);
      const std::vector<uint8_t> jpeg =
          vision::encode_jpeg(pixels_.data(), out.width, out.height, 3, encoding_.quality);
      return std::string(jpeg.begin(), jpeg.end());
    } catch (const vision::DecodeError& e) {
      throw Error(mploader::detail::message(
          "mploader-pack", "the image " + mploader::detail::in_quotes(path) +
                               " does not decode: " + e.what(),
          "Replace the file and run the same command: the pack resumes (removing it changes "
          "the samples: then give --overwrite to pack again)"));
    }
  }

  std::shared_ptr<vision::ImageFolder> folder_;
  ImageEncoding encoding_;
  vision::ImageDecoder decoder_;
  vision::RgbImage image_;
  vision::RenderScratch scratch_;
  std::vector<uint8_t> pixels_;
};

class GenericSource : public Dataset {
 public:
  explicit GenericSource(std::shared_ptr<Dataset> inner) : inner_(std::move(inner)) {}
  size_t size() const override { return inner_->size(); }

  Sample get(int64_t index) override {
    const Sample in = inner_->get(index);
    Sample out;
    for (const auto& [name, t] : in) {
      if (t.dim() == 0 && at::isIntegralType(t.scalar_type(), /*includeBool=*/false)) {
        out.set_text("int:" + name, std::to_string(t.item<int64_t>()));
      } else {
        out.set_text("npy:" + name, shards::detail::npy_bytes(t.cpu(), name));
      }
    }
    for (const auto& [name, bytes] : in.texts()) out.set_text("text:" + name, bytes);
    return out;
  }

  std::optional<DatasetRecipe> recipe() const override { return std::nullopt; }

 private:
  std::shared_ptr<Dataset> inner_;
};

}  // namespace

std::shared_ptr<Dataset> image_source(const std::string& input, const ImageEncoding& encoding) {
  // The transform is never run: the source reads the files itself.
  const vision::Compose unused({vision::Resize(vision::Size2{1, 1})});
  const bool list = input.size() > 4 && input.compare(input.size() - 4, 4, ".txt") == 0;
  auto folder = list ? vision::ImageFolder::from_list(input, unused)
                     : std::make_shared<vision::ImageFolder>(input, unused);
  return std::make_shared<ImageSource>(folder, encoding);
}

std::shared_ptr<Dataset> generic_source(std::shared_ptr<Dataset> inner) {
  return std::make_shared<GenericSource>(std::move(inner));
}

bool split_member_field(const std::string& text_name, std::string& kind, std::string& field) {
  const size_t colon = text_name.find(':');
  if (colon == std::string::npos) return false;
  kind = text_name.substr(0, colon);
  field = text_name.substr(colon + 1);
  return true;
}

}  // namespace mploader::pack
