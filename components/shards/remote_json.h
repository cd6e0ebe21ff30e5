// shards/: RemoteOptions as JSON and back, for the spawn recipes of TarShards and PackedShards.
#pragma once

#include <mploader/remote/remote.h>

#include <nlohmann/json.hpp>

namespace mploader::shards::detail {

nlohmann::json remote_json(const remote::RemoteOptions& r);
remote::RemoteOptions remote_from(const nlohmann::json& j);

}  // namespace mploader::shards::detail
