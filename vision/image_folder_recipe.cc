// ImageFolder in a spawned worker: its root or list, options and transforms as JSON, and the
// factory that builds it again from that text. The recipe holds no scan: the worker lists the
// folder itself (or reads the scan cache), and must find what the training process found.
#include <mploader/errors.h>
#include <mploader/registry.h>
#include <mploader/vision/image_folder.h>

#include <nlohmann/json.hpp>

namespace mploader::vision {
namespace {

using nlohmann::json;

json size_json(Size2 s) { return json::array({s.height, s.width}); }
Size2 size_from(const json& j) { return Size2{j.at(0).get<int>(), j.at(1).get<int>()}; }

json transform_json(const Transform& step) {
  if (const auto* t = std::get_if<RandomResizedCrop>(&step)) {
    return {{"type", "RandomResizedCrop"}, {"size", size_json(t->size)},
            {"scale", {t->scale.first, t->scale.second}},
            {"ratio", {t->ratio.first, t->ratio.second}}};
  }
  if (const auto* t = std::get_if<Resize>(&step)) {
    json j = {{"type", "Resize"}, {"size", size_json(t->size)}};
    if (t->shorter_side) j["shorter_side"] = *t->shorter_side;
    if (t->max_size) j["max_size"] = *t->max_size;
    return j;
  }
  if (const auto* t = std::get_if<CenterCrop>(&step)) {
    return {{"type", "CenterCrop"}, {"size", size_json(t->size)}};
  }
  if (const auto* t = std::get_if<RandomHorizontalFlip>(&step)) {
    return {{"type", "RandomHorizontalFlip"}, {"p", t->p}};
  }
  if (std::holds_alternative<ToTensor>(step)) return {{"type", "ToTensor"}};
  const auto& n = std::get<Normalize>(step);
  return {{"type", "Normalize"}, {"mean", n.mean}, {"std", n.std}};
}

Transform transform_from(const json& j) {
  const std::string type = j.at("type").get<std::string>();
  if (type == "RandomResizedCrop") {
    const json& scale = j.at("scale");
    const json& ratio = j.at("ratio");
    return RandomResizedCrop(size_from(j.at("size")), {scale.at(0), scale.at(1)},
                             {ratio.at(0), ratio.at(1)});
  }
  if (type == "Resize") {
    if (!j.contains("shorter_side")) return Resize(size_from(j.at("size")));
    return Resize(j.at("shorter_side").get<int>(),
                  j.contains("max_size") ? std::optional<int>(j.at("max_size").get<int>())
                                         : std::nullopt);
  }
  if (type == "CenterCrop") return CenterCrop(size_from(j.at("size")));
  if (type == "RandomHorizontalFlip") return RandomHorizontalFlip(j.at("p").get<double>());
  if (type == "ToTensor") return ToTensor{};
  if (type == "Normalize") {
    return Normalize(j.at("mean").get<std::array<double, 3>>(),
                     j.at("std").get<std::array<double, 3>>());
  }
  throw std::invalid_argument("unknown transform \"" + type + "\"");
}

json options_json(const ImageFolderOptions& o) {
  json j = {{"on_bad_image", o.on_bad_image == OnBadImage::kSkip ? "skip" : "raise"},
            {"max_pixels", o.max_pixels},
            {"extensions", o.extensions},
            {"cache_file", o.cache_file},
            {"max_consecutive_bad", o.max_consecutive_bad}};
  if (o.seed) j["seed"] = *o.seed;
  return j;
}

ImageFolderOptions options_from(const json& j) {
  ImageFolderOptions o;
  o.on_bad_image = j.at("on_bad_image") == "skip" ? OnBadImage::kSkip : OnBadImage::kRaise;
  o.max_pixels = j.at("max_pixels").get<int64_t>();
  o.extensions = j.at("extensions").get<std::vector<std::string>>();
  o.cache_file = j.at("cache_file").get<std::string>();
  o.max_consecutive_bad = j.at("max_consecutive_bad").get<int>();
  if (j.contains("seed")) o.seed = j.at("seed").get<uint64_t>();
  return o;
}

std::shared_ptr<Dataset> image_folder_from(const std::string& config) {
  const json j = json::parse(config);
  std::vector<Transform> steps;
  for (const json& step : j.at("transforms")) steps.push_back(transform_from(step));
  ImageFolderOptions options = options_from(j.at("options"));
  const std::string list_file = j.at("list_file").get<std::string>();
  if (!list_file.empty()) {
    return ImageFolder::from_list(list_file, Compose(std::move(steps)), std::move(options));
  }
  return std::make_shared<ImageFolder>(j.at("root").get<std::string>(), Compose(std::move(steps)),
                                       std::move(options));
}

}  // namespace

MPLOADER_REGISTER_DATASET("mploader.vision.ImageFolder", image_folder_from);

std::optional<DatasetRecipe> ImageFolder::recipe() const {
  json steps = json::array();
  for (const Transform& step : transform_.transforms()) steps.push_back(transform_json(step));
  const json config = {{"root", source_.root},
                       {"list_file", source_.list_file},
                       {"options", options_json(options_)},
                       {"transforms", steps}};
  return DatasetRecipe{"mploader.vision.ImageFolder", config.dump()};
}

}  // namespace mploader::vision
