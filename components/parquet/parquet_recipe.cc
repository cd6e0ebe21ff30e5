// ParquetShards in a spawned worker: the files with their footers' counts, the columns and the
// options as JSON, and the factory that builds the dataset from that text without reading a
// footer again (each worker checks a file against its entry when it opens it).
#include <mploader/errors.h>
#include <mploader/parquet/parquet_shards.h>
#include <mploader/registry.h>

#include "parquet/pq_columns.h"
#include "vision/transform_json.h"

#include <nlohmann/json.hpp>

namespace mploader::parquet {
namespace {

using nlohmann::json;

constexpr const char* kFactory = "mploader.parquet.ParquetShards";

[[noreturn]] void bad_recipe(const std::string& what) {
  throw Error("mploader: ParquetShards recipe: " + what + ". Fix: pass the text "
              "ParquetShards::recipe() returned, unchanged");
}

int64_t integer(const json& j, const char* what) {
  if (!j.is_number_integer()) {
    bad_recipe(std::string(what) + " is " + j.dump() + ", not an integer");
  }
  return j.get<int64_t>();
}

NullPolicy policy_from(const json& j) {
  for (NullPolicy p : {NullPolicy::kRefuse, NullPolicy::kFill, NullPolicy::kMask}) {
    if (j == detail::policy_name(p)) return p;
  }
  bad_recipe("null policy " + j.dump() + " is none of refuse, fill, mask");
}

ColumnKind kind_from(const json& j) {
  for (ColumnKind k : {ColumnKind::kTensor, ColumnKind::kList, ColumnKind::kText,
                       ColumnKind::kImage}) {
    if (j == detail::kind_name(k)) return k;
  }
  bad_recipe("column kind " + j.dump() + " is none of tensor, list, text, image");
}

json options_json(const ParquetShardsOptions& o) {
  json images = json::object();
  for (const auto& [name, compose] : o.image_columns) {
    images[name] = vision::compose_to_json(compose);
  }
  json nulls = json::object();
  for (const auto& [name, policy] : o.column_nulls) nulls[name] = detail::policy_name(policy);
  return {{"columns", o.columns}, {"image_columns", images},
          {"nulls", detail::policy_name(o.nulls)}, {"column_nulls", nulls},
          {"null_fill", o.null_fill}, {"read_ahead", o.read_ahead},
          {"cache_bytes", o.cache_bytes}, {"max_pixels", o.max_pixels}};
}

ParquetShardsOptions options_from(const json& j) {
  ParquetShardsOptions o;
  o.columns = j.at("columns").get<std::vector<std::string>>();
  for (const auto& [name, steps] : j.at("image_columns").items()) {
    o.image_columns.emplace(name, vision::compose_from_json(steps));
  }
  o.nulls = policy_from(j.at("nulls"));
  for (const auto& [name, policy] : j.at("column_nulls").items()) {
    o.column_nulls[name] = policy_from(policy);
  }
  o.null_fill = j.at("null_fill").get<double>();
  o.read_ahead = integer(j.at("read_ahead"), "read_ahead");
  o.cache_bytes = integer(j.at("cache_bytes"), "cache_bytes");
  o.max_pixels = integer(j.at("max_pixels"), "max_pixels");
  if (o.read_ahead < 0 || o.cache_bytes < 0 || o.max_pixels < 1) {
    bad_recipe("read_ahead, cache_bytes or max_pixels is out of range");
  }
  return o;
}

json column_json(const ParquetColumnInfo& c) {
  return {{"name", c.name}, {"arrow_type", c.arrow_type}, {"kind", detail::kind_name(c.kind)},
          {"dtype", static_cast<int>(c.dtype)}, {"shape", c.shape},
          {"nulls", detail::policy_name(c.nulls)}, {"read_path", c.read_path}};
}

ParquetColumnInfo column_from(const json& j) {
  ParquetColumnInfo c;
  c.name = j.at("name").get<std::string>();
  c.arrow_type = j.at("arrow_type").get<std::string>();
  c.kind = kind_from(j.at("kind"));
  const int64_t dtype = integer(j.at("dtype"), "dtype");
  if (dtype < 0 || dtype >= static_cast<int64_t>(at::ScalarType::NumOptions)) {
    bad_recipe("dtype " + std::to_string(dtype) + " is no torch type");
  }
  c.dtype = static_cast<at::ScalarType>(dtype);
  for (const json& d : j.at("shape")) {
    c.shape.push_back(integer(d, "a shape's size"));
    if (c.shape.back() < 0) bad_recipe("column '" + c.name + "' has a negative size");
  }
  c.nulls = policy_from(j.at("nulls"));
  c.read_path = j.at("read_path").get<std::string>();
  return c;
}

}  // namespace

MPLOADER_REGISTER_DATASET(kFactory, [](const std::string& config) -> std::shared_ptr<Dataset> {
  return ParquetShards::from_recipe(config);
});

std::optional<DatasetRecipe> ParquetShards::recipe() const {
  json files = json::array();
  for (const ParquetFileInfo& f : files_) {
    files.push_back({{"path", f.path}, {"size", f.size}, {"mtime_ns", f.mtime_ns},
                     {"row_group_rows", f.row_group_rows}});
  }
  json columns = json::array();
  for (const ParquetColumnInfo& c : columns_) columns.push_back(column_json(c));
  const json j = {{"files", files}, {"columns", columns}, {"options", options_json(options_)}};
  return DatasetRecipe{kFactory, j.dump()};
}

std::shared_ptr<ParquetShards> ParquetShards::from_recipe(const std::string& config) {
  try {
    const json j = json::parse(config);
    std::vector<ParquetFileInfo> files;
    for (const json& f : j.at("files")) {
      ParquetFileInfo info{f.at("path").get<std::string>(), integer(f.at("size"), "size"),
                           integer(f.at("mtime_ns"), "mtime_ns"), {}};
      for (const json& n : f.at("row_group_rows")) {
        info.row_group_rows.push_back(integer(n, "a row group's rows"));
        if (info.row_group_rows.back() < 0) bad_recipe("a row group has a negative count");
      }
      files.push_back(std::move(info));
    }
    std::vector<ParquetColumnInfo> columns;
    for (const json& c : j.at("columns")) columns.push_back(column_from(c));
    ParquetShardsOptions options = options_from(j.at("options"));
    for (const ParquetColumnInfo& c : columns) {
      if (c.kind == ColumnKind::kImage && options.image_columns.count(c.name) == 0) {
        bad_recipe("image column '" + c.name + "' has no transform");
      }
    }
    if (files.empty() || columns.empty()) bad_recipe("it lists no file or no column");
    return std::shared_ptr<ParquetShards>(
        new ParquetShards(std::move(files), std::move(columns), std::move(options)));
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {  // JSON that does not parse or has the wrong shape
    bad_recipe(std::string("it does not read (") + e.what() + ")");
  }
}

}  // namespace mploader::parquet
