// ImageFolder in a spawned worker: its root or list, options and transforms as JSON, and the
// factory that builds it again from that text. The recipe holds no scan: the worker lists the
// folder itself (or reads the scan cache), and must find what the training process found.
#include <mploader/errors.h>
#include <mploader/registry.h>
#include <mploader/vision/image_folder.h>
#include "core/recipe_json.h"
#include "vision/transform_json.h"

#include <nlohmann/json.hpp>

namespace mploader::vision {
namespace {

using nlohmann::json;

json options_json(const ImageFolderOptions& o) {
  json j = {{"on_bad_image", o.on_bad_image == OnBadImage::kSkip ? "skip" : "raise"},
            {"max_pixels", o.max_pixels},
            {"max_file_bytes", o.max_file_bytes},
            {"extensions", o.extensions},
            {"cache_file", o.cache_file},
            {"max_consecutive_bad", o.max_consecutive_bad},
            {"full_decode", o.full_decode}};
  if (o.seed) j["seed"] = *o.seed;
  return j;
}

ImageFolderOptions options_from(const json& j) {
  ImageFolderOptions o;
  o.on_bad_image = j.at("on_bad_image") == "skip" ? OnBadImage::kSkip : OnBadImage::kRaise;
  o.max_pixels = j.at("max_pixels").get<int64_t>();
  o.max_file_bytes = j.at("max_file_bytes").get<int64_t>();
  o.extensions = j.at("extensions").get<std::vector<std::string>>();
  o.cache_file = j.at("cache_file").get<std::string>();
  o.max_consecutive_bad = j.at("max_consecutive_bad").get<int>();
  o.full_decode = j.at("full_decode").get<bool>();
  if (j.contains("seed")) o.seed = j.at("seed").get<uint64_t>();
  return o;
}

std::shared_ptr<Dataset> image_folder_from_text(const std::string& config) {
  const json j = json::parse(config);
  Compose transform = compose_from_json(j.at("transforms"));
  ImageFolderOptions options = options_from(j.at("options"));
  const std::string list_file = j.at("list_file").get<std::string>();
  if (!list_file.empty()) {
    return ImageFolder::from_list(list_file, std::move(transform), std::move(options));
  }
  return std::make_shared<ImageFolder>(j.at("root").get<std::string>(), std::move(transform),
                                       std::move(options));
}

std::shared_ptr<Dataset> image_folder_from(const std::string& config) {
  return mploader::detail::read_recipe("mploader.vision.ImageFolder",
                                       [&] { return image_folder_from_text(config); });
}

}  // namespace

MPLOADER_REGISTER_DATASET("mploader.vision.ImageFolder", image_folder_from);

std::optional<DatasetRecipe> ImageFolder::recipe() const {
  const json config = {{"root", source_.root},
                       {"list_file", source_.list_file},
                       {"options", options_json(options_)},
                       {"transforms", compose_to_json(transform_)}};
  return DatasetRecipe{"mploader.vision.ImageFolder", config.dump()};
}

}  // namespace mploader::vision
