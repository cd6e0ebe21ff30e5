// TarShards in a spawned worker: the paths, options (image transforms included) and the scan
// as JSON, and the factory that builds the dataset from that text without scanning again.
#include <mploader/registry.h>
#include <mploader/shards/tar_shards.h>

#include "core/recipe_json.h"
#include "shards/remote_json.h"
#include "vision/transform_json.h"

#include <nlohmann/json.hpp>

namespace mploader::shards {

namespace detail {

nlohmann::json remote_json(const remote::RemoteOptions& r) {
  return {{"cache_dir", r.cache_dir}, {"cache_limit_bytes", r.cache_limit_bytes},
          {"manifest", r.manifest}, {"endpoint_url", r.endpoint_url},
          {"aws_profile", r.aws_profile}, {"region", r.region},
          {"connect_timeout_s", r.connect_timeout_s}, {"stall_timeout_s", r.stall_timeout_s},
          {"max_retries", r.max_retries}, {"cache_local_paths", r.cache_local_paths},
          {"prefetch_bytes", r.prefetch_bytes}};
}

remote::RemoteOptions remote_from(const nlohmann::json& j) {
  remote::RemoteOptions r;
  r.cache_dir = j.at("cache_dir").get<std::string>();
  r.cache_limit_bytes = j.at("cache_limit_bytes").get<int64_t>();
  r.manifest = j.at("manifest").get<std::string>();
  r.endpoint_url = j.at("endpoint_url").get<std::string>();
  r.aws_profile = j.at("aws_profile").get<std::string>();
  r.region = j.at("region").get<std::string>();
  r.connect_timeout_s = j.at("connect_timeout_s").get<double>();
  r.stall_timeout_s = j.at("stall_timeout_s").get<double>();
  r.max_retries = j.at("max_retries").get<int>();
  r.cache_local_paths = j.at("cache_local_paths").get<bool>();
  r.prefetch_bytes = j.at("prefetch_bytes").get<int64_t>();
  return r;
}

}  // namespace detail

namespace {

using detail::remote_from;
using detail::remote_json;

using nlohmann::json;

constexpr const char* kFactory = "mploader.shards.TarShards";

json options_json(const TarShardsOptions& o) {
  json images = json::object();
  for (const auto& [ext, compose] : o.image_keys) images[ext] = vision::compose_to_json(compose);
  return {{"keys", o.keys},
          {"int_keys", o.int_keys},
          {"image_keys", images},
          {"on_bad_sample", o.on_bad_sample == OnBadSample::kSkip ? "skip" : "raise"},
          {"max_consecutive_bad", o.max_consecutive_bad},
          {"read_ahead", o.read_ahead},
          {"read_ahead_bytes", o.read_ahead_bytes},
          {"max_pixels", o.max_pixels},
          {"remote", remote_json(o.remote)}};
}

TarShardsOptions options_from(const json& j) {
  TarShardsOptions o;
  o.keys = j.at("keys").get<std::vector<std::string>>();
  o.int_keys = j.at("int_keys").get<std::vector<std::string>>();
  for (const auto& [ext, steps] : j.at("image_keys").items()) {
    o.image_keys.emplace(ext, vision::compose_from_json(steps));
  }
  o.on_bad_sample = j.at("on_bad_sample") == "skip" ? OnBadSample::kSkip : OnBadSample::kRaise;
  o.max_consecutive_bad = j.at("max_consecutive_bad").get<int>();
  o.read_ahead = j.at("read_ahead").get<int64_t>();
  o.read_ahead_bytes = j.at("read_ahead_bytes").get<int64_t>();
  o.max_pixels = j.at("max_pixels").get<int64_t>();
  o.remote = remote_from(j.at("remote"));
  return o;
}

}  // namespace

MPLOADER_REGISTER_DATASET(kFactory, [](const std::string& config) -> std::shared_ptr<Dataset> {
  return TarShards::from_recipe(config);
});

std::optional<DatasetRecipe> TarShards::recipe() const {
  json scans = json::array();
  for (const ShardScan& s : scans_) {
    scans.push_back({s.num_samples, s.file_bytes, s.mtime_ns, s.sha256});
  }
  const json config = {{"paths", paths_}, {"scans", scans}, {"options", options_json(options_)}};
  return DatasetRecipe{kFactory, config.dump()};
}

std::shared_ptr<TarShards> TarShards::from_recipe(const std::string& config) {
  return mploader::detail::read_recipe(kFactory, [&] {
    const json j = json::parse(config);
    std::vector<ShardScan> scans;
    for (const json& s : j.at("scans")) {
      scans.push_back(ShardScan{s.at(0).get<int64_t>(), s.at(1).get<int64_t>(),
                                s.at(2).get<int64_t>(), s.at(3).get<std::string>()});
    }
    // The private constructor: the worker trusts the training process's scan, and each reader
    // checks its tar's size and modification time against it when it opens the file.
    return std::shared_ptr<TarShards>(new TarShards(
        j.at("paths").get<std::vector<std::string>>(), std::move(scans),
        options_from(j.at("options"))));
  });
}

}  // namespace mploader::shards
