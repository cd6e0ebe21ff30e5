/// @file
/// H5Dataset: HDF5 datasets as a map-style mploader::Dataset, read with libhdf5. Part of the
/// mploader::hdf5 component (CMake target mploader::hdf5).
///
///   using namespace mploader;
///   auto data = std::make_shared<hdf5::H5Dataset>(
///       "train.h5", std::vector<hdf5::H5Field>{{"image", "/images"}, {"label", "/labels"}});
///   Loader loader(data, LoaderOptions{});  // "image" [B, ...], "label" [B]
///
/// Sample i holds row i (along the first axis) of every HDF5 dataset named. The file is opened
/// in each process that reads it, never handed across a fork: with workers, the training
/// process learns the shapes and types from a short-lived process that opens the file, reads
/// its metadata and exits, and each worker opens the file on its first read. This is the fix
/// h5py's users are told to make by hand (open the file in each worker).
#pragma once

#include <mploader/dataset.h>

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mploader::hdf5 {

/// One field of every sample: `name` in the sample, read from the HDF5 dataset at `path`
/// ("/images", "group/labels").
struct H5Field {
  std::string name;  ///< The field's name in the sample and the batch.
  std::string path;  ///< The HDF5 dataset's path in the file.
};

/// How H5Dataset reads.
struct H5DatasetOptions {
  /// Bytes of HDF5's chunk cache for each field of a chunked dataset, in each process that
  /// reads (a worker, or the training process with num_workers = 0). A chunk is decompressed
  /// once per visit to the cache: room for the chunks that a batch touches saves decompressing
  /// them again for the next row. HDF5's own default is 1 MiB. 0 turns the cache off.
  int64_t chunk_cache_bytes = int64_t{32} << 20;
  /// Open the file for SWMR reading (single writer, multiple readers): the file may still be
  /// appended to by a writer in SWMR mode. The dataset's rows are those counted when it was
  /// built. Off: a file that changes (size or modification time) after the dataset was built
  /// is an error when a process opens it.
  bool swmr_read = false;
  /// Seconds the metadata probe (the short-lived process) may take before it is killed and
  /// the construction fails, naming the file.
  double probe_timeout_s = 120;
};

/// What the metadata says of one field.
struct H5FieldInfo {
  std::string name;                ///< The field's name.
  std::string path;                ///< The HDF5 dataset's path.
  std::string file_type;           ///< The type in the file: "uint16", "float16", "vlen string"
  at::ScalarType dtype;            ///< The tensor's element type (unused for text fields).
  bool text = false;               ///< A string dataset: a text field of the sample.
  std::vector<int64_t> shape;      ///< The HDF5 dataset's shape, rows first.
  std::vector<int64_t> chunk;      ///< Its chunk shape; empty when not chunked.
  std::vector<std::string> filters;  ///< Its filters in order ("deflate", "shuffle", ...).
  /// The shape of one row: shape without its first dimension.
  std::vector<int64_t> row_shape() const;
};

/// Row i of each HDF5 dataset named is sample i.
///
/// Types: signed integers of 1 to 8 bytes, uint8, float16/32/64 (either byte order) and h5py's
/// booleans keep their type; uint16 and uint32 are widened to int32 and int64 by libhdf5 while
/// reading (torch has no arithmetic on them); enums read as their base integer. uint64 and
/// compound, array, reference and opaque types are refused, naming the field. Strings (fixed
/// length or variable length, ASCII or UTF-8) become text fields: a string dataset must be
/// one-dimensional, one string per row.
///
/// How a batch is written: without text fields the dataset declares its layout and each batch
/// is read straight into the ring slot, one HDF5 selection per field for the batch's rows in
/// file order (rows the sampler shuffled are then put in the batch's order, one copy). With a
/// text field every sample is read on its own (get()).
///
/// A worker opens the file on its first read and keeps it open; an object copied into another
/// process by fork opens it again there. Not for use by several threads at once (its open
/// file and its scratch memory belong to one reader at a time).
class H5Dataset : public Dataset {
 public:
  /// Reads the metadata in a short-lived process (the training process never opens the file).
  /// Throws mploader::Error naming the file: missing, not HDF5, truncated, a path that is not
  /// there (listing the datasets the file holds), an unsupported type, fields whose first
  /// dimensions differ, a scalar dataset.
  H5Dataset(std::string file, std::vector<H5Field> fields, H5DatasetOptions options = {});
  ~H5Dataset() override;
  H5Dataset(const H5Dataset& other);  ///< A copy opens the file again when it reads.
  H5Dataset& operator=(const H5Dataset&) = delete;

  /// The rows every field has.
  size_t size() const override { return static_cast<size_t>(rows_); }
  /// Row `index` of each field: tensors of the row's shape, text for string fields.
  Sample get(int64_t index) override;
  /// Each field's dtype and row shape; nullopt when a field is text (samples then come from
  /// get()).
  std::optional<SampleLayout> sample_layout() const override;
  /// Reads row `index` of each field straight into its place in the batch.
  void write(int64_t index, SampleWriter& out) override;
  /// Reads the batch's rows of each field with one selection, in file order.
  void write_batch(const int64_t* indices, size_t count, BatchWriter& out) override;
  /// The file, the fields, the options and the metadata: a spawned worker does not probe again.
  std::optional<DatasetRecipe> recipe() const override;
  /// Builds the dataset from recipe()'s text. Throws mploader::Error naming what is wrong.
  static std::shared_ptr<H5Dataset> from_recipe(const std::string& config);

  const std::string& file() const { return file_; }  ///< The file read.
  const std::vector<H5FieldInfo>& fields() const { return info_; }  ///< The fields' metadata.
  const H5DatasetOptions& options() const { return options_; }  ///< The options given.

  /// For mploader and its tests: whether this process has the file open.
  bool is_open_here() const;

  /// The file as the metadata found it: a change is refused later.
  struct FileStamp {
    uint64_t size = 0;     ///< Its size in bytes.
    int64_t mtime_ns = 0;  ///< Its modification time, in nanoseconds since the epoch.
  };

 private:
  struct ProcessFile;  // the handles of the process that opened them (hdf5/h5_reader.h)
  H5Dataset(std::string file, std::vector<H5Field> fields, H5DatasetOptions options,
            std::vector<H5FieldInfo> info, FileStamp stamp);
  void check_fields();
  ProcessFile& open();
  void read_sorted_batch(const int64_t* indices, size_t count, BatchWriter& out);

  std::string file_;
  std::vector<H5Field> fields_;
  H5DatasetOptions options_;
  std::vector<H5FieldInfo> info_;
  FileStamp stamp_;
  int64_t rows_ = 0;
  bool has_text_ = false;
  std::unique_ptr<ProcessFile> open_;
  std::vector<uint8_t> scratch_;  // a shuffled batch's rows in file order
};

}  // namespace mploader::hdf5
