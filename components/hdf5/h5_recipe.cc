// H5Dataset in a spawned worker: the file, fields, options and metadata as JSON, and the
// factory that builds the dataset from that text without probing the file again.
#include <mploader/errors.h>
#include <mploader/hdf5/h5_dataset.h>
#include <mploader/registry.h>

#include "hdf5/h5_meta.h"

#include <nlohmann/json.hpp>

namespace mploader::hdf5 {
namespace {

using nlohmann::json;

constexpr const char* kFactory = "mploader.hdf5.H5Dataset";

}  // namespace

MPLOADER_REGISTER_DATASET(kFactory, [](const std::string& config) -> std::shared_ptr<Dataset> {
  return H5Dataset::from_recipe(config);
});

std::optional<DatasetRecipe> H5Dataset::recipe() const {
  json fields = json::array();
  for (const H5Field& f : fields_) fields.push_back({f.name, f.path});
  const json j = {{"file", file_},
                  {"fields", fields},
                  {"chunk_cache_bytes", options_.chunk_cache_bytes},
                  {"swmr_read", options_.swmr_read},
                  {"probe_timeout_s", options_.probe_timeout_s},
                  {"stamp", {stamp_.size, stamp_.mtime_ns}},
                  {"info", detail::info_to_json(info_)}};
  return DatasetRecipe{kFactory, j.dump()};
}

std::shared_ptr<H5Dataset> H5Dataset::from_recipe(const std::string& config) {
  try {
    const json j = json::parse(config);
    std::vector<H5Field> fields;
    for (const auto& f : j.at("fields")) {
      fields.push_back({f.at(0).get<std::string>(), f.at(1).get<std::string>()});
    }
    H5DatasetOptions options;
    options.chunk_cache_bytes =
        detail::json_integer(j.at("chunk_cache_bytes"), "chunk_cache_bytes");
    options.swmr_read = j.at("swmr_read").get<bool>();
    options.probe_timeout_s = j.at("probe_timeout_s").get<double>();
    const FileStamp stamp{static_cast<uint64_t>(detail::json_integer(j.at("stamp").at(0), "stamp")),
                          detail::json_integer(j.at("stamp").at(1), "stamp")};
    return std::shared_ptr<H5Dataset>(new H5Dataset(j.at("file").get<std::string>(),
                                                    std::move(fields), options,
                                                    detail::info_from_json(j.at("info")), stamp));
  } catch (const json::exception& e) {
    throw Error(std::string("mploader: H5Dataset recipe: malformed (") + e.what() +
                "). Fix: pass the text H5Dataset::recipe() returned, unchanged");
  }
}

}  // namespace mploader::hdf5
