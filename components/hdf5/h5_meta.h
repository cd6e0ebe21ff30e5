// The metadata of the fields of an HDF5 file: what the short-lived probe process reads, what a
// spawned worker gets in the recipe, and what each reading process checks again on open.
#pragma once

#include "hdf5/h5_handle.h"
#include "hdf5/h5_types.h"

#include <mploader/hdf5/h5_dataset.h>

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

namespace mploader::hdf5::detail {

// "mploader: H5Dataset: <file>: ", the start of every message about `file`.
std::string error_prefix(const std::string& file);

// Opens `file` read-only (for SWMR reading when `swmr`), with `fapl` (H5P_DEFAULT or a file
// access property list). Throws Error naming the file and libhdf5's reason.
Handle open_file(const std::string& file, bool swmr);

// Opens dataset `path`, with a chunk cache of `cache_bytes` (negative: libhdf5's default).
// Throws Error naming the file, the path and the datasets the file holds when it is not one.
Handle open_field(hid_t file, const std::string& file_name, const std::string& path,
                  int64_t cache_bytes);

// The metadata of field `field`, whose dataset `dataset` is open; its type mapping (the memory
// type rows are read as) goes to `mapping_out` when given. Throws Error naming the file and the
// field for a type it cannot read or a scalar dataset.
H5FieldInfo describe_field(hid_t dataset, const std::string& file_name, const H5Field& field,
                           TypeMapping* mapping_out = nullptr);

// The paths of the file's datasets, in name order, at most `limit` of them; `total` gets their
// number.
std::vector<std::string> dataset_paths(hid_t file, size_t limit, size_t* total);

// Opens the file and describes every field; checks that their first dimensions agree.
std::vector<H5FieldInfo> read_metadata(const std::string& file, const std::vector<H5Field>& fields,
                                       bool swmr);

// The rows every field has; throws Error naming the fields when their first dimensions differ.
int64_t common_rows(const std::string& file, const std::vector<H5FieldInfo>& info);

// The file's size and modification time, or an Error naming it (missing, unreadable).
H5Dataset::FileStamp stamp_of(const std::string& file);

// An integer of recipe text: Error naming `what` unless `j` is one (a float such as 1e30 would
// not convert to int64).
int64_t json_integer(const nlohmann::json& j, const char* what);

nlohmann::json info_to_json(const std::vector<H5FieldInfo>& info);
// Throws nlohmann::json::exception (or Error for a dtype it does not know) on malformed text.
std::vector<H5FieldInfo> info_from_json(const nlohmann::json& j);

}  // namespace mploader::hdf5::detail
