// mploader._C.hdf5: H5Dataset for Python, with the options of H5DatasetOptions by name. The
// fields arrive as (name, path) pairs; hdf5.py accepts a dict or names too.
#include "native_dataset.h"

#include <mploader/hdf5/h5_dataset.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

namespace mploader::python {
namespace {

// The C++ constructor throws a plain mploader::Error for these; a user's mistake in Python is
// an OptionError naming the option.
void check_options(const hdf5::H5DatasetOptions& o) {
  if (o.chunk_cache_bytes < 0) {
    throw OptionError("chunk_cache_bytes",
                      "mploader: H5Dataset: chunk_cache_bytes=" +
                          std::to_string(o.chunk_cache_bytes) +
                          " is negative. Give 0 or more bytes (0 turns the cache off).");
  }
  if (!(o.probe_timeout_s > 0)) {
    throw OptionError("probe_timeout_s", "mploader: H5Dataset: probe_timeout_s=" +
                                             std::to_string(o.probe_timeout_s) +
                                             " is not positive. Give a number of seconds > 0.");
  }
}

void check_fields(const std::vector<hdf5::H5Field>& fields) {
  if (fields.empty()) {
    throw OptionError("fields", "mploader: H5Dataset: no fields. Give at least one, e.g. "
                                "{'image': '/images', 'label': '/labels'}.");
  }
  std::set<std::string> names;
  for (const hdf5::H5Field& f : fields) {
    if (f.name.empty() || f.path.empty() || !names.insert(f.name).second) {
      const std::string what = f.name.empty() || f.path.empty() ? "is empty" : "is given twice";
      throw OptionError("fields", "mploader: H5Dataset: fields: the name '" + f.name +
                                      "' (path '" + f.path + "') " + what +
                                      ". Give every field a name of its own and a dataset "
                                      "path.");
    }
  }
}

NativeDataset h5_dataset(const std::string& file,
                         const std::vector<std::pair<std::string, std::string>>& pairs,
                         py::kwargs kwargs) {
  Keywords k(std::move(kwargs), "H5Dataset");
  hdf5::H5DatasetOptions o;
  k.take("chunk_cache_bytes", o.chunk_cache_bytes);
  k.take("swmr_read", o.swmr_read);
  k.take("probe_timeout_s", o.probe_timeout_s);
  k.check_all_used();
  check_options(o);
  std::vector<hdf5::H5Field> fields;
  for (const auto& [name, path] : pairs) fields.push_back({name, path});
  check_fields(fields);
  std::shared_ptr<hdf5::H5Dataset> dataset;
  {
    py::gil_scoped_release unlocked;  // the metadata probe runs a process and waits for it
    dataset = std::make_shared<hdf5::H5Dataset>(file, std::move(fields), o);
  }
  return {dataset, "mploader.hdf5.H5Dataset"};
}

// The fields as the metadata describes them: [{name, path, file_type, dtype, text, shape,
// chunk, filters}].
py::list fields_of(const NativeDataset& d) {
  auto h5 = std::dynamic_pointer_cast<hdf5::H5Dataset>(d.dataset);
  if (!h5) {
    throw OptionError("dataset", "mploader: hdf5.fields: " + d.kind +
                                     " is not an H5Dataset. Give an H5Dataset.");
  }
  py::list out;
  for (const hdf5::H5FieldInfo& f : h5->fields()) {
    py::dict info;
    info["name"] = f.name;
    info["path"] = f.path;
    info["file_type"] = f.file_type;
    info["dtype"] = f.text ? "" : c10::toString(f.dtype);
    info["text"] = f.text;
    info["shape"] = f.shape;
    info["chunk"] = f.chunk;
    info["filters"] = f.filters;
    out.append(info);
  }
  return out;
}

}  // namespace

void bind_hdf5(py::module_& m) {
  m.def("H5Dataset", &h5_dataset, py::arg("file"), py::arg("fields"));
  m.def("fields", &fields_of, py::arg("dataset"));
}

}  // namespace mploader::python
