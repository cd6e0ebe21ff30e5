// Transforms as JSON (transform_json.h): what a spawned worker rebuilds a Compose from.
#include "vision/transform_json.h"

#include "util/errors.h"

#include <mploader/errors.h>

#include <stdexcept>
#include <string>

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
  throw OptionError("transforms",
                    mploader::detail::message("Compose", "unknown transform \"" + type + "\"",
                                              "Pass the transforms' recipe as mploader wrote "
                                              "it, unchanged"));
}

}  // namespace

json compose_to_json(const Compose& compose) {
  json steps = json::array();
  for (const Transform& step : compose.transforms()) steps.push_back(transform_json(step));
  return steps;
}

Compose compose_from_json(const json& steps) {
  std::vector<Transform> out;
  for (const json& step : steps) out.push_back(transform_from(step));
  return Compose(std::move(out));
}

}  // namespace mploader::vision
