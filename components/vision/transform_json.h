// A Compose as JSON and back: the form spawned workers rebuild transforms from. Shared by
// ImageFolder's recipe and by the components above vision/ that decode images (shards/).
#pragma once

#include <mploader/vision/transforms.h>

#include <nlohmann/json.hpp>

namespace mploader::vision {

/// The transforms of `compose`, in order, as a JSON array of objects with a "type".
nlohmann::json compose_to_json(const Compose& compose);
/// The Compose compose_to_json() wrote. Throws OptionError("transforms", ...) for an unknown type and
/// nlohmann::json's exceptions for a malformed entry.
Compose compose_from_json(const nlohmann::json& steps);

}  // namespace mploader::vision
