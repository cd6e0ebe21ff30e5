// mploader._C.parquet: ParquetShards for Python, with the options of ParquetShardsOptions by
// name. Image transforms arrive as the JSON that spawned workers rebuild them from (parquet.py
// makes it).
#include "native_dataset.h"
#include "vision/transform_json.h"

#include <mploader/parquet/parquet_shards.h>

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mploader::python {
namespace {

parquet::NullPolicy null_policy(const char* option, const std::string& name) {
  return choice_named<parquet::NullPolicy>("ParquetShards", option, name,
                                           {{"refuse", parquet::NullPolicy::kRefuse},
                                            {"fill", parquet::NullPolicy::kFill},
                                            {"mask", parquet::NullPolicy::kMask}});
}

// The C++ check names only read_ahead for any of these three; name the one that is wrong.
void at_least(const char* name, int64_t value, int64_t least) {
  if (value < least) {
    throw OptionError(name, "mploader: ParquetShards: " + std::string(name) + "=" +
                                std::to_string(value) + " is too small. Give " +
                                std::to_string(least) + " or more.");
  }
}

parquet::ParquetShardsOptions parquet_options(Keywords& k) {
  parquet::ParquetShardsOptions o;
  k.take("columns", o.columns);
  // image_columns: {column: JSON steps}, made from transforms by parquet.py.
  std::map<std::string, std::string> images;
  k.take("image_columns", images);
  for (const auto& [name, steps] : images) {
    try {
      o.image_columns.emplace(name, vision::compose_from_json(nlohmann::json::parse(steps)));
    } catch (const OptionError& e) {  // it names "transforms"; here they are image_columns'
      throw OptionError("image_columns", "mploader: ParquetShards: image_columns['" + name +
                                             "']: " + e.what());
    }
  }
  if (k.has("nulls")) o.nulls = null_policy("nulls", k.get("nulls").cast<std::string>());
  std::map<std::string, std::string> column_nulls;
  k.take("column_nulls", column_nulls);
  for (const auto& [name, policy] : column_nulls) {
    o.column_nulls[name] = null_policy("column_nulls", policy);
  }
  k.take("null_fill", o.null_fill);
  k.take("read_ahead", o.read_ahead);
  k.take("cache_bytes", o.cache_bytes);
  k.take("max_pixels", o.max_pixels);
  at_least("read_ahead", o.read_ahead, 0);
  at_least("cache_bytes", o.cache_bytes, 0);
  at_least("max_pixels", o.max_pixels, 1);
  return o;
}

// Either a list of Parquet files or a folder of them.
NativeDataset parquet_shards(const std::optional<std::vector<std::string>>& paths,
                             const std::optional<std::string>& directory, py::kwargs kwargs) {
  Keywords k(std::move(kwargs), "ParquetShards");
  parquet::ParquetShardsOptions options = parquet_options(k);
  k.check_all_used();
  std::shared_ptr<parquet::ParquetShards> dataset;
  py::gil_scoped_release unlocked;  // reads every file's footer
  if (directory) {
    dataset = parquet::ParquetShards::from_directory(*directory, std::move(options));
  } else {
    dataset = std::make_shared<parquet::ParquetShards>(
        paths.value_or(std::vector<std::string>{}), std::move(options));
  }
  return {dataset, "mploader.parquet.ParquetShards"};
}

const char* kind_name(parquet::ColumnKind kind) {
  switch (kind) {
    case parquet::ColumnKind::kTensor: return "tensor";
    case parquet::ColumnKind::kList: return "list";
    case parquet::ColumnKind::kText: return "text";
    case parquet::ColumnKind::kImage: return "image";
  }
  return "?";
}

// The fields as the footers described them: [{name, arrow_type, kind, dtype, shape}].
py::list columns_of(const NativeDataset& d) {
  auto shards = std::dynamic_pointer_cast<parquet::ParquetShards>(d.dataset);
  if (!shards) {
    throw OptionError("dataset", "mploader: parquet.columns: " + d.kind +
                                     " is not a ParquetShards. Give a ParquetShards.");
  }
  py::list out;
  for (const parquet::ParquetColumnInfo& c : shards->columns()) {
    py::dict info;
    info["name"] = c.name;
    info["arrow_type"] = c.arrow_type;
    info["kind"] = kind_name(c.kind);
    info["dtype"] = c.kind == parquet::ColumnKind::kText ? "" : c10::toString(c.dtype);
    info["shape"] = c.shape;
    out.append(info);
  }
  return out;
}

}  // namespace

void bind_parquet(py::module_& m) {
  m.def("ParquetShards", &parquet_shards, py::arg("paths"), py::arg("directory"));
  m.def("columns", &columns_of, py::arg("dataset"));
}

}  // namespace mploader::python
