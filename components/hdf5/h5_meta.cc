// Reading an HDF5 file's metadata: the fields' types, shapes, chunks and filters, without
// reading data.
#include "hdf5/h5_meta.h"

#include "hdf5/h5_types.h"

#include <mploader/errors.h>

#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace mploader::hdf5::detail {
namespace {

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

struct PathList {
  std::vector<std::string> paths;
  size_t limit = 0;
  size_t total = 0;
};

// libhdf5 1.12 changed the object info's type (H5O_info2_t) and the visit's name.
#if H5_VERSION_GE(1, 12, 0)
using ObjectInfo = H5O_info2_t;
#define MPLOADER_H5OVISIT H5Ovisit3
#else
using ObjectInfo = H5O_info_t;
#define MPLOADER_H5OVISIT H5Ovisit2
#endif

herr_t visit_object(hid_t, const char* name, const ObjectInfo* info, void* data) {
  auto* list = static_cast<PathList*>(data);
  if (info->type != H5O_TYPE_DATASET) return 0;
  ++list->total;
  if (list->paths.size() < list->limit) list->paths.push_back(std::string("/") + name);
  return 0;
}

void describe_layout(hid_t dataset, const std::string& file_name, H5FieldInfo& info) {
  Handle dcpl(H5Dget_create_plist(dataset), H5Pclose);
  if (!dcpl.valid()) return;
  if (H5Pget_layout(dcpl.get()) == H5D_CHUNKED) {
    std::vector<hsize_t> chunk(info.shape.size());
    if (H5Pget_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()) >= 0) {
      info.chunk.assign(chunk.begin(), chunk.end());
    }
  }
  const int filters = H5Pget_nfilters(dcpl.get());
  for (int i = 0; i < filters; ++i) {
    unsigned flags = 0, config = 0;
    size_t values = 0;
    char name[64] = {};
    const H5Z_filter_t id = H5Pget_filter2(dcpl.get(), static_cast<unsigned>(i), &flags, &values,
                                           nullptr, sizeof name, name, &config);
    const std::string label = name[0] != '\0' ? std::string(name) : "filter " + std::to_string(id);
    if (id >= 0 && H5Zfilter_avail(id) <= 0) {
      throw Error(error_prefix(file_name) + "field '" + info.name + "' (" + info.path +
                  ") is compressed with " + label + " (filter id " + std::to_string(id) +
                  "), which this libhdf5 does not have (h5py's lzf and plugin filters such as "
                  "blosc are not built in). Fix: write the dataset with compression=\"gzip\" "
                  "or none, or install the filter plugin and set HDF5_PLUGIN_PATH");
    }
    info.filters.push_back(id == H5Z_FILTER_DEFLATE ? "deflate"
                           : id == H5Z_FILTER_SHUFFLE ? "shuffle"
                           : id == H5Z_FILTER_FLETCHER32 ? "fletcher32"
                                                         : label);
  }
}

const std::vector<std::pair<at::ScalarType, const char*>>& dtype_names() {
  static const std::vector<std::pair<at::ScalarType, const char*>> names = {
      {at::kByte, "uint8"}, {at::kChar, "int8"},    {at::kShort, "int16"},
      {at::kInt, "int32"},  {at::kLong, "int64"},   {at::kHalf, "float16"},
      {at::kFloat, "float32"}, {at::kDouble, "float64"}, {at::kBool, "bool"}};
  return names;
}

// libhdf5 locks a file it opens (HDF5_USE_FILE_LOCKING, on by default): a writer holds the
// lock while the file is open, and a file system without locks refuses it. Neither is damage.
void refuse_if_locked(const std::string& file, const std::vector<std::string>& stack) {
  for (const std::string& message : stack) {
    if (message.find("unable to lock file") == std::string::npos) continue;
    // EAGAIN/EWOULDBLOCK (11): another process holds the lock.
    if (message.find("errno = 11,") != std::string::npos) {
      throw Error(error_prefix(file) + "another process holds the file open for writing, so "
                  "libhdf5 cannot lock it for reading (" + message + "). Fix: close the file "
                  "in the writer (h5py: leave its `with h5py.File(...)` block, or call close()) "
                  "before the job reads it; if no process writes it (read-only shared "
                  "storage), set HDF5_USE_FILE_LOCKING=FALSE in the job's environment");
    }
    throw Error(error_prefix(file) + "its file system refuses the lock libhdf5 takes to read it (" +
                message + "). Fix: set HDF5_USE_FILE_LOCKING=FALSE in the job's environment "
                "(the file must then not be written while the job reads it)");
  }
}

}  // namespace

std::string error_prefix(const std::string& file) {
  return "mploader: H5Dataset: " + file + ": ";
}

Handle open_file(const std::string& file, bool swmr) {
  quiet_hdf5_errors();
  const std::string bytes = std::to_string(stamp_of(file).size) + " bytes";
  if (H5Fis_hdf5(file.c_str()) <= 0) {
    const std::string why = error_stack_text();
    throw Error(error_prefix(file) + "not an HDF5 file (" + bytes +
                (why.empty() ? "" : ": " + why) + "). Fix: pass a file written by h5py or libhdf5");
  }
  const unsigned flags = H5F_ACC_RDONLY | (swmr ? H5F_ACC_SWMR_READ : 0u);
  Handle handle(H5Fopen(file.c_str(), flags, H5P_DEFAULT), H5Fclose);
  if (!handle.valid()) {
    std::vector<std::string> stack;
    const std::string why = error_stack_text(&stack);
    refuse_if_locked(file, stack);
    throw Error(error_prefix(file) + "libhdf5 cannot open it (" +
                (why.empty() ? "no reason given" : why) + "; " + bytes + "). " +
                (swmr ? "Fix: SWMR reading needs a file written with libver='latest' (h5py) "
                        "or a v110 format; or turn swmr_read off"
                      : "Fix: the file is damaged or cut short (a copy that did not finish?): "
                        "write or copy it again"));
  }
  return handle;
}

Handle open_field(hid_t file, const std::string& file_name, const std::string& path,
                  int64_t cache_bytes) {
  Handle dapl(H5Pcreate(H5P_DATASET_ACCESS), H5Pclose);
  if (cache_bytes >= 0) {
    // Slots: about 100 times the chunks that fit, as libhdf5 advises, at least its default.
    const size_t slots = std::max<size_t>(521, static_cast<size_t>(cache_bytes >> 14) * 100 + 1);
    H5Pset_chunk_cache(dapl.get(), slots | 1, static_cast<size_t>(cache_bytes), 0.75);
  }
  const htri_t exists = path.empty() ? 0 : H5Lexists(file, path.c_str(), H5P_DEFAULT);
  Handle dataset;
  if (exists > 0) dataset = Handle(H5Dopen2(file, path.c_str(), dapl.get()), H5Dclose);
  if (!dataset.valid()) {
    error_stack_text();  // "not found" and the like: our message says it better
    size_t total = 0;
    const std::vector<std::string> paths = dataset_paths(file, 20, &total);
    throw Error(error_prefix(file_name) + "no dataset at '" + path + "'. The file holds " +
                std::to_string(total) + " dataset" + (total == 1 ? "" : "s") +
                (paths.empty() ? "" : ": " + join(paths)) +
                (total > paths.size() ? ", ..." : "") + ". Fix: name one of those paths");
  }
  return dataset;
}

H5FieldInfo describe_field(hid_t dataset, const std::string& file_name, const H5Field& field,
                           TypeMapping* mapping_out) {
  H5FieldInfo info;
  info.name = field.name;
  info.path = field.path;
  Handle type(H5Dget_type(dataset), H5Tclose);
  Handle space(H5Dget_space(dataset), H5Sclose);
  const int rank = space.valid() ? H5Sget_simple_extent_ndims(space.get()) : -1;
  if (!type.valid() || rank < 0) {
    throw Error(error_prefix(file_name) + "field '" + field.name + "' (" + field.path +
                "): its metadata cannot be read (" + error_stack_text() +
                "). Fix: the file is damaged: write it again");
  }
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  info.shape.assign(dims.begin(), dims.end());
  TypeMapping mapping = map_type(type.get());
  info.file_type = mapping.file_type;
  info.dtype = mapping.dtype;
  info.text = mapping.text;
  const std::string where =
      error_prefix(file_name) + "field '" + field.name + "' (" + field.path + ", " +
      info.file_type + " " + shape_text(info.shape) + ")";
  if (!mapping.refused.empty()) throw Error(where + ": " + mapping.refused);
  if (rank == 0) {
    throw Error(where + " is a scalar: a field needs one row per sample along its first "
                "dimension. Fix: store it with shape [rows, ...]");
  }
  if (info.text && rank != 1) {
    throw Error(where + ": a string dataset must be one-dimensional, one string per sample. "
                "Fix: store it with shape [rows]");
  }
  describe_layout(dataset, file_name, info);
  if (mapping_out != nullptr) *mapping_out = std::move(mapping);
  return info;
}

std::vector<std::string> dataset_paths(hid_t file, size_t limit, size_t* total) {
  PathList list;
  list.limit = limit;
  MPLOADER_H5OVISIT(file, H5_INDEX_NAME, H5_ITER_INC, visit_object, &list, H5O_INFO_BASIC);
  error_stack_text();
  if (total != nullptr) *total = list.total;
  return list.paths;
}

std::vector<H5FieldInfo> read_metadata(const std::string& file, const std::vector<H5Field>& fields,
                                       bool swmr) {
  Handle handle = open_file(file, swmr);
  std::vector<H5FieldInfo> info;
  for (const H5Field& field : fields) {
    Handle dataset = open_field(handle.get(), file, field.path, -1);
    info.push_back(describe_field(dataset.get(), file, field));
  }
  common_rows(file, info);
  return info;
}

int64_t common_rows(const std::string& file, const std::vector<H5FieldInfo>& info) {
  const int64_t rows = info.front().shape.front();
  for (const H5FieldInfo& f : info) {
    if (f.shape.front() != rows) {
      throw Error(error_prefix(file) + "field '" + f.name + "' (" + f.path + ") has " +
                  std::to_string(f.shape.front()) + " rows but '" + info.front().name + "' (" +
                  info.front().path + ") has " + std::to_string(rows) +
                  ": every field needs one row per sample. Fix: name datasets of equal first "
                  "dimension, or wrap the dataset in a Subset of the rows they share");
    }
  }
  return rows;
}

H5Dataset::FileStamp stamp_of(const std::string& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) {
    throw Error(error_prefix(file) + std::strerror(errno) + ". Fix: check the path");
  }
  return {static_cast<uint64_t>(st.st_size),
          int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec};
}

int64_t json_integer(const nlohmann::json& j, const char* what) {
  if (!j.is_number_integer()) {
    throw Error(std::string("mploader: H5Dataset metadata: ") + what + " is " + j.dump() +
                ", not an integer. Fix: pass the text H5Dataset::recipe() returned, unchanged");
  }
  return j.get<int64_t>();
}

namespace {

std::vector<int64_t> json_integers(const nlohmann::json& j, const char* what) {
  std::vector<int64_t> out;
  for (const auto& item : j) out.push_back(json_integer(item, what));
  return out;
}

}  // namespace

nlohmann::json info_to_json(const std::vector<H5FieldInfo>& info) {
  nlohmann::json out = nlohmann::json::array();
  for (const H5FieldInfo& f : info) {
    const char* dtype = "uint8";
    for (const auto& [type, name] : dtype_names()) {
      if (type == f.dtype) dtype = name;
    }
    out.push_back({{"name", f.name}, {"path", f.path}, {"file_type", f.file_type},
                   {"dtype", dtype}, {"text", f.text}, {"shape", f.shape}, {"chunk", f.chunk},
                   {"filters", f.filters}});
  }
  return out;
}

std::vector<H5FieldInfo> info_from_json(const nlohmann::json& j) {
  std::vector<H5FieldInfo> info;
  for (const auto& item : j) {
    H5FieldInfo f;
    f.name = item.at("name").get<std::string>();
    f.path = item.at("path").get<std::string>();
    f.file_type = item.at("file_type").get<std::string>();
    const std::string dtype = item.at("dtype").get<std::string>();
    bool known = false;
    for (const auto& [type, name] : dtype_names()) {
      if (dtype == name) f.dtype = type, known = true;
    }
    if (!known) throw Error("mploader: H5Dataset metadata names an unknown dtype '" + dtype + "'");
    f.text = item.at("text").get<bool>();
    f.shape = json_integers(item.at("shape"), "a field's shape");
    f.chunk = json_integers(item.at("chunk"), "a field's chunk shape");
    f.filters = item.at("filters").get<std::vector<std::string>>();
    info.push_back(std::move(f));
  }
  return info;
}

}  // namespace mploader::hdf5::detail
