// mploader._C.shards: TarShards for Python, with the options of TarShardsOptions by name. Image
// transforms arrive as the JSON that spawned workers rebuild them from (shards.py makes it).
#include "native_dataset.h"
#include "vision/transform_json.h"

#include <mploader/block_sampler.h>
#include <mploader/shards/packed_shards.h>
#include <mploader/shards/tar_shards.h>

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mploader::python {
namespace {

// TarShardsOptions::remote, given as remote={...} with RemoteOptions' field names.
void take_remote(Keywords& k, remote::RemoteOptions& r) {
  if (!k.has("remote") || k.get("remote").is_none()) return;
  py::object given = k.get("remote");
  if (!py::isinstance<py::dict>(given)) {
    throw OptionError("remote", "mploader: TarShards: remote=" + std::string(py::repr(given)) +
                                    " is not a dict. Give a dict of RemoteOptions' fields, "
                                    "e.g. remote={'cache_dir': '/dev/shm/shards'}.");
  }
  Keywords rk(py::reinterpret_borrow<py::kwargs>(given), "TarShards remote");
  rk.take("cache_dir", r.cache_dir);
  rk.take("cache_limit_bytes", r.cache_limit_bytes);
  rk.take("manifest", r.manifest);
  rk.take("endpoint_url", r.endpoint_url);
  rk.take("aws_profile", r.aws_profile);
  rk.take("region", r.region);
  rk.take("connect_timeout_s", r.connect_timeout_s);
  rk.take("stall_timeout_s", r.stall_timeout_s);
  rk.take("cache_local_paths", r.cache_local_paths);
  rk.take("prefetch_bytes", r.prefetch_bytes);
  rk.take("max_retries", r.max_retries);
  rk.check_all_used();
}

shards::TarShardsOptions tar_shards_options(Keywords& k) {
  shards::TarShardsOptions o;
  k.take("keys", o.keys);
  k.take("int_keys", o.int_keys);
  // image_keys: {extension: JSON steps}, made from transforms by shards.py.
  std::map<std::string, std::string> images;
  k.take("image_keys", images);
  for (const auto& [ext, steps] : images) {
    try {
      o.image_keys.emplace(ext, vision::compose_from_json(nlohmann::json::parse(steps)));
    } catch (const OptionError& e) {  // it names "transforms"; here they are image_keys'
      throw OptionError("image_keys", "mploader: TarShards: image_keys['" + ext +
                                          "']: " + e.what());
    }
  }
  k.choose("on_bad_sample", o.on_bad_sample,
           {{"raise", shards::OnBadSample::kRaise}, {"skip", shards::OnBadSample::kSkip}});
  k.take("max_consecutive_bad", o.max_consecutive_bad);
  k.take("read_ahead", o.read_ahead);
  k.take("read_ahead_bytes", o.read_ahead_bytes);
  k.take("max_pixels", o.max_pixels);
  take_remote(k, o.remote);
  return o;
}

// Either a list of tars (paths, URLs, brace patterns, s3:// prefixes) or a folder of them.
NativeDataset tar_shards(const std::optional<std::vector<std::string>>& paths,
                         const std::optional<std::string>& directory, py::kwargs kwargs) {
  Keywords k(std::move(kwargs), "TarShards");
  shards::TarShardsOptions options = tar_shards_options(k);
  k.check_all_used();
  std::shared_ptr<shards::TarShards> dataset;
  py::gil_scoped_release unlocked;  // the scan reads every tar's headers
  if (directory) {
    dataset = shards::TarShards::from_directory(*directory, std::move(options));
  } else {
    dataset = std::make_shared<shards::TarShards>(paths.value_or(std::vector<std::string>{}),
                                                  std::move(options));
  }
  return {dataset, "mploader.shards.TarShards"};
}

// A pack mploader-pack wrote, by its folder, its description or a URL of either.
NativeDataset packed_shards(const std::string& pack, py::kwargs kwargs) {
  Keywords k(std::move(kwargs), "PackedShards");
  shards::PackedShardsOptions o;
  std::map<std::string, std::string> images;  // {field: JSON steps}, made by shards.py
  k.take("image_fields", images);
  for (const auto& [field, steps] : images) {
    try {
      o.image_fields.emplace(field, vision::compose_from_json(nlohmann::json::parse(steps)));
    } catch (const OptionError& e) {
      throw OptionError("image_fields", "mploader: PackedShards: image_fields['" + field +
                                            "']: " + e.what());
    }
  }
  k.take("max_pixels", o.max_pixels);
  k.take("verify_local", o.verify_local);
  k.choose("remote_read", o.remote_read,
           {{"ranges", shards::RemoteRead::kRanges},
            {"whole_shards", shards::RemoteRead::kWholeShards}});
  k.take("merge_gap_bytes", o.merge_gap_bytes);
  k.take("max_request_bytes", o.max_request_bytes);
  k.take("max_held_shards", o.max_held_shards);
  take_remote(k, o.remote);
  k.check_all_used();
  py::gil_scoped_release unlocked;  // a pack by URL fetches its description
  return {std::make_shared<shards::PackedShards>(pack, std::move(o)),
          "mploader.shards.PackedShards"};
}

std::shared_ptr<shards::PackedShards> packed_of(const NativeDataset& d) {
  auto packed = std::dynamic_pointer_cast<shards::PackedShards>(d.dataset);
  if (!packed) {
    throw OptionError("dataset", "mploader: shards: " + d.kind +
                                     " is not a PackedShards. Give a PackedShards.");
  }
  return packed;
}

std::shared_ptr<shards::TarShards> tar_shards_of(const NativeDataset& d) {
  auto tars = std::dynamic_pointer_cast<shards::TarShards>(d.dataset);
  if (!tars) {
    throw OptionError("dataset", "mploader: shards: " + d.kind +
                                     " is not a TarShards. Give a TarShards.");
  }
  return tars;
}

}  // namespace

void bind_shards(py::module_& m) {
  m.def("TarShards", &tar_shards, py::arg("paths"), py::arg("directory"));
  m.def("paths", [](const NativeDataset& d) { return tar_shards_of(d)->paths(); },
        py::arg("dataset"));
  m.def("samples_per_shard", [](const NativeDataset& d) {
    std::vector<int64_t> counts;
    for (const shards::ShardScan& s : tar_shards_of(d)->scans()) counts.push_back(s.num_samples);
    return counts;
  }, py::arg("dataset"));
  m.def("PackedShards", &packed_shards, py::arg("pack"));
  m.def("shard_sizes", [](const NativeDataset& d) { return packed_of(d)->shard_sizes(); },
        py::arg("dataset"));
  m.def("fields", [](const NativeDataset& d) { return packed_of(d)->fields(); },
        py::arg("dataset"));
  m.def("block_shuffle_indices",
        [](size_t size, int64_t block_samples, uint64_t seed, int64_t world_size, int64_t rank,
           bool drop_last, std::vector<int64_t> shard_samples, uint64_t epoch) {
          BlockShuffleSampler sampler(block_samples, seed, world_size, rank, drop_last,
                                      std::move(shard_samples));
          sampler.check_fits(size);
          return sampler.indices(size, epoch);
        },
        py::arg("size"), py::arg("block_samples"), py::arg("seed"), py::arg("world_size"),
        py::arg("rank"), py::arg("drop_last"), py::arg("shard_samples"), py::arg("epoch"));
}

}  // namespace mploader::python
