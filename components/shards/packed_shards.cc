// PackedShards (mploader/shards/packed_shards.h): the description found and checked once, a
// PackReader per process, members turned into tensors, and the spawn recipe.
#include <mploader/shards/packed_shards.h>

#include "shards/npy_member.h"
#include "shards/pack_format.h"
#include "shards/packed_reader.h"
#include "shards/remote_json.h"
#include "shards/sample_decode.h"
#include "shards/text.h"

#include "core/recipe_json.h"
#include "remote/manifest.h"
#include "vision/transform_json.h"

#include <mploader/loading_context.h>
#include <mploader/registry.h>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <sys/stat.h>

namespace mploader::shards {

using detail::PackedKind;

struct PackedShards::Description {
  detail::PackDescription pack;
  std::string base;  // the folder (path or URL) the names are relative to
  bool remote = false;
};

struct PackedShards::Reading {
  Reading(const Description& d, const PackedShardsOptions& o)
      : reader(d.pack, d.base, read_options(d, o)), decoding(o.max_pixels) {}
  static detail::PackReadOptions read_options(const Description& d, const PackedShardsOptions& o) {
    detail::PackReadOptions r;
    r.remote = d.remote;
    r.verify = o.verify_local;
    r.whole_shards = o.remote_read == RemoteRead::kWholeShards;
    r.merge_gap_bytes = o.merge_gap_bytes;
    r.max_request_bytes = o.max_request_bytes;
    r.max_held_shards = o.max_held_shards;
    r.remote_options = o.remote;
    return r;
  }
  detail::PackReader reader;
  detail::ImageDecoding decoding;
};

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kFactory = "mploader.shards.PackedShards";
constexpr const char* kDescriptionName = "mploader-pack.json";

std::string strip_slash(std::string s) {
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Where the description is and the folder its names are relative to.
std::pair<std::string, std::string> locate(const std::string& pack) {
  const std::string p = strip_slash(pack);
  if (ends_with(p, ".json")) {
    const size_t slash = p.rfind('/');
    return {p, slash == std::string::npos ? std::string(".") : p.substr(0, slash)};
  }
  return {p + "/" + kDescriptionName, p};
}

std::shared_ptr<const PackedShards::Description> read_description(const std::string& pack,
                                                                  const remote::RemoteOptions& o);

void check_options(const detail::PackDescription& pack, const PackedShardsOptions& o,
                   const std::string& where) {
  for (const auto& [name, compose] : o.image_fields) {
    auto it = std::find_if(pack.fields.begin(), pack.fields.end(),
                           [&](const detail::PackedField& f) { return f.name == name; });
    if (it == pack.fields.end() || it->kind != PackedKind::kImage) {
      std::vector<std::string> images;
      for (const auto& f : pack.fields) {
        if (f.kind == PackedKind::kImage) images.push_back(f.name);
      }
      throw OptionError("image_fields", mploader::detail::message(
          "PackedShards", "the pack " + detail::in_quotes(where) + " has no image field " +
                              detail::in_quotes(name),
          "Its image fields are: " +
              (images.empty() ? std::string("none") : mploader::detail::comma_list(images))));
    }
  }
  if (o.merge_gap_bytes < 0 || o.max_request_bytes < 1 || o.max_held_shards < 1) {
    throw OptionError("merge_gap_bytes", mploader::detail::message(
        "PackedShards", "merge_gap_bytes " + std::to_string(o.merge_gap_bytes) +
                            ", max_request_bytes " + std::to_string(o.max_request_bytes) +
                            " and max_held_shards " + std::to_string(o.max_held_shards) +
                            " must be >= 0, >= 1 and >= 1",
        "Give sizes in bytes"));
  }
}

}  // namespace

PackedShards::PackedShards(std::string pack, PackedShardsOptions options)
    : PackedShards(pack, nullptr, std::move(options)) {}

PackedShards::PackedShards(std::string pack, std::shared_ptr<const Description> description,
                           PackedShardsOptions options)
    : location_(std::move(pack)), description_(std::move(description)),
      options_(std::move(options)) {
  if (!description_) description_ = read_description(location_, options_.remote);
  check_options(description_->pack, options_, location_);
}

PackedShards::~PackedShards() = default;

size_t PackedShards::size() const { return static_cast<size_t>(description_->pack.samples); }

size_t PackedShards::num_shards() const { return description_->pack.shards.size(); }

std::vector<std::string> PackedShards::fields() const {
  std::vector<std::string> out;
  for (const auto& f : description_->pack.fields) {
    out.push_back(f.name + ":" + detail::kind_name(f.kind));
  }
  return out;
}

std::vector<int64_t> PackedShards::shard_sizes() const {
  std::vector<int64_t> out;
  for (const auto& s : description_->pack.shards) out.push_back(s.samples);
  return out;
}

size_t PackedShards::shard_of(int64_t index) const {
  return detail::shard_of(description_->pack, index);
}

int64_t PackedShards::range_requests() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return reading_ ? reading_->reader.range_requests() : 0;
}

int64_t PackedShards::range_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return reading_ ? reading_->reader.range_bytes() : 0;
}

void PackedShards::prepare_batch(const int64_t* indices, size_t count) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!reading_) reading_ = std::make_unique<Reading>(*description_, options_);
  reading_->reader.prepare(indices, count);
}

Sample PackedShards::get(int64_t index) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!reading_) reading_ = std::make_unique<Reading>(*description_, options_);
  const detail::SampleData data = reading_->reader.read(index);
  const auto ctx = loading_context();
  const uint64_t seed = ctx ? sample_seed(ctx->seed, ctx->epoch, index) : sample_seed(0, 0, index);
  Sample out;
  const auto& fields = description_->pack.fields;
  for (size_t f = 0; f < fields.size(); ++f) {
    const uint8_t* bytes = data.bytes.data() + data.members[f].offset;
    const size_t size = data.members[f].size;
    const std::string name = std::to_string(index) + "." + fields[f].name;
    try {
      if (fields[f].kind == PackedKind::kText) {
        out.set_bytes(fields[f].name, bytes, size);
      } else if (fields[f].kind == PackedKind::kInt) {
        out.set(fields[f].name, detail::int_member_tensor(bytes, size, name));
      } else if (fields[f].kind == PackedKind::kNpy) {
        out.set(fields[f].name, detail::npy_tensor(bytes, size, name));
      } else if (auto it = options_.image_fields.find(fields[f].name);
                 it != options_.image_fields.end()) {
        out.set(fields[f].name, detail::image_member_tensor(bytes, size, name, it->second, seed,
                                                            reading_->decoding));
      } else {
        at::Tensor t = at::empty({static_cast<int64_t>(size)}, at::kByte);
        if (size > 0) std::memcpy(t.data_ptr(), bytes, size);
        out.set(fields[f].name, t);
      }
    } catch (const detail::BadSample& e) {
      const auto& shard = description_->pack.shards[shard_of(index)];
      throw Error(mploader::detail::message("PackedShards", std::string(e.what()) + " (shard " +
                                                                detail::in_quotes(shard.tar) + ")",
                                            "Pack the data again"));
    }
  }
  return out;
}

namespace {

// A local pack's tars against the description's sizes, when the pack is opened: a tar cut short
// or replaced, or a description of another pack, is named here, before any read. (By URL, a
// tar's size is checked when its bytes come: in the range's reply, or by the shard cache.)
void check_tar_sizes(const PackedShards::Description& d, const std::string& where) {
  for (const detail::PackedShard& s : d.pack.shards) {
    const std::string path = d.base + "/" + s.tar;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      throw Error(mploader::detail::message(
          "PackedShards", "cannot find " + detail::in_quotes(path) + " (" +
                              std::strerror(errno) + "), a tar the pack's description " +
                              detail::in_quotes(where) + " lists",
          "Copy every file of the pack, or pack the data again"));
    }
    if (st.st_size != s.tar_bytes) {
      throw Error(mploader::detail::message(
          "PackedShards", detail::in_quotes(path) + " is " +
                              std::to_string(static_cast<int64_t>(st.st_size)) +
                              " bytes where the pack's description " + detail::in_quotes(where) +
                              " says " + std::to_string(s.tar_bytes) + ": the tar was cut "
                              "short or changed since the pack was written, or the "
                              "description is another pack's",
          "Copy the pack's files again together, or pack the data again"));
    }
  }
}

std::shared_ptr<const PackedShards::Description> read_description(
    const std::string& pack, const remote::RemoteOptions& o) {
  auto d = std::make_shared<PackedShards::Description>();
  d->remote = remote::is_url(pack);
  if (!d->remote && !fs::exists(pack)) {
    throw OptionError("pack", mploader::detail::message(
        "PackedShards", "no pack at " + detail::in_quotes(pack),
        "Give the folder mploader-pack wrote (or its mploader-pack.json)"));
  }
  auto [where, base] = locate(pack);
  d->base = base;
  std::string text;
  try {
    text = remote::detail::fetch_text(where, o);
  } catch (const OptionError&) {
    throw OptionError("pack", mploader::detail::message(
        "PackedShards", "cannot read " + detail::in_quotes(where),
        "Give the folder mploader-pack wrote; a pack still being written has only "
        "mploader-pack.progress.json: finish it first"));
  } catch (const remote::TransportError& e) {
    throw OptionError("pack", mploader::detail::message(
        "PackedShards", "cannot read the pack description " + detail::in_quotes(where) + ": " +
                            e.what(),
        "Check the URL and the credentials"));
  }
  d->pack = detail::parse_pack(text, where);
  if (!d->remote) check_tar_sizes(*d, where);
  return d;
}

json options_json(const PackedShardsOptions& o) {
  json images = json::object();
  for (const auto& [f, compose] : o.image_fields) images[f] = vision::compose_to_json(compose);
  return {{"image_fields", images},
          {"max_pixels", o.max_pixels},
          {"verify_local", o.verify_local},
          {"whole_shards", o.remote_read == RemoteRead::kWholeShards},
          {"merge_gap_bytes", o.merge_gap_bytes},
          {"max_request_bytes", o.max_request_bytes},
          {"max_held_shards", o.max_held_shards},
          {"remote", detail::remote_json(o.remote)}};
}

PackedShardsOptions options_from(const json& j) {
  PackedShardsOptions o;
  for (const auto& [f, steps] : j.at("image_fields").items()) {
    o.image_fields.emplace(f, vision::compose_from_json(steps));
  }
  o.max_pixels = j.at("max_pixels").get<int64_t>();
  o.verify_local = j.at("verify_local").get<bool>();
  o.remote_read = j.at("whole_shards").get<bool>() ? RemoteRead::kWholeShards : RemoteRead::kRanges;
  o.merge_gap_bytes = j.at("merge_gap_bytes").get<int64_t>();
  o.max_request_bytes = j.at("max_request_bytes").get<int64_t>();
  o.max_held_shards = j.at("max_held_shards").get<int>();
  o.remote = detail::remote_from(j.at("remote"));
  return o;
}

}  // namespace

MPLOADER_REGISTER_DATASET(kFactory, [](const std::string& config) -> std::shared_ptr<Dataset> {
  return PackedShards::from_recipe(config);
});

std::optional<DatasetRecipe> PackedShards::recipe() const {
  const json config = {{"location", location_},
                       {"base", description_->base},
                       {"remote", description_->remote},
                       {"pack", json::parse(detail::pack_text(description_->pack))},
                       {"options", options_json(options_)}};
  return DatasetRecipe{kFactory, config.dump()};
}

std::shared_ptr<PackedShards> PackedShards::from_recipe(const std::string& config) {
  return mploader::detail::read_recipe(kFactory, [&] {
    const json j = json::parse(config);
    auto d = std::make_shared<Description>();
    d->base = j.at("base").get<std::string>();
    d->remote = j.at("remote").get<bool>();
    d->pack = detail::parse_pack(j.at("pack").dump(), "the spawn recipe");
    return std::shared_ptr<PackedShards>(new PackedShards(
        j.at("location").get<std::string>(), std::move(d), options_from(j.at("options"))));
  });
}

}  // namespace mploader::shards
