/// @file
/// ParquetShards: Parquet files as a StreamingDataset, one shard per row group, read with
/// Arrow C++ and Parquet C++. Part of the mploader::parquet component (CMake target
/// mploader::parquet); this header does not include Arrow.
///
///   using namespace mploader;
///   parquet::ParquetShardsOptions o;
///   o.columns = {"input_ids", "label"};  // read only these (projection)
///   auto data = parquet::ParquetShards::from_directory("/data/train", o);
///   LoaderOptions lo;
///   lo.shuffle = true;
///   lo.shuffle_buffer = 4096;
///   Loader loader(data, lo);
///
/// Each row group of each file is one shard: ranks and workers are given row groups, and the
/// counts come from the files' footers, read once when the dataset is built (no data is read
/// then). A worker decodes a row group once, keeps the last few it decoded for its shuffle
/// buffer, and copies each row out of them.
#pragma once

#include <mploader/streaming.h>
#include <mploader/vision/image.h>
#include <mploader/vision/transforms.h>

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mploader::parquet {

/// What a column's null values become.
enum class NullPolicy {
  /// A null fails the batch, naming the file, the row group, the row and the column.
  kRefuse,
  /// A null becomes ParquetShardsOptions::null_fill (every element of a fixed-size list, an
  /// empty list, or an empty text field).
  kFill,
  /// As kFill, and a bool scalar field "<column>_valid" tells each row whether it held a value.
  kMask,
};

/// How a column becomes a field of the sample.
enum class ColumnKind {
  kTensor,  ///< Numbers, or fixed-size lists of them: a tensor of one shape for every row.
  kList,    ///< Variable-length lists of numbers: a 1-D tensor per row (collate with pad_collate).
  kText,    ///< Strings and binary: a text field (TensorDict::set_text), bytes as they are.
  kImage,   ///< Encoded JPEG or PNG bytes, decoded through a vision::Compose.
};

/// How ParquetShards reads.
struct ParquetShardsOptions {
  /// The columns to read, in this order (projection: the others are never read). Empty: every
  /// column of the files, in the files' order. A nested column is named by its top-level name.
  std::vector<std::string> columns;
  /// Columns holding encoded images (JPEG or PNG): binary columns, or structs with a binary
  /// "bytes" child (how Hugging Face stores an Image feature). Each is decoded and transformed
  /// by its Compose into its output tensor. Random transforms are seeded with
  /// sample_seed(seed, epoch, index) of the Loader (mploader/worker_info.h).
  std::map<std::string, vision::Compose> image_columns;
  /// What nulls become, for every column not in column_nulls.
  NullPolicy nulls = NullPolicy::kRefuse;
  /// Per column: overrides `nulls`.
  std::map<std::string, NullPolicy> column_nulls;
  /// The value a null number becomes under kFill and kMask (converted to the column's dtype).
  double null_fill = 0;
  /// Most rows a reading process keeps decoded but not yet asked for, in the row groups behind
  /// the one it reads. A Loader's shuffle buffer hands rows out in random order, and holds
  /// some for long after the stream has moved on: a row group is kept while it has rows not
  /// yet asked for among these, so that it is decoded once an epoch. Set it to at least
  /// LoaderOptions::shuffle_buffer (the Loader warns otherwise); 0 keeps only the row group
  /// being read, and a row asked for after its row group was left decodes it again.
  int64_t read_ahead = 8192;
  /// Most bytes of decoded row groups kept; the oldest go first. The row group being read and
  /// the one before it always stay.
  int64_t cache_bytes = int64_t{1} << 30;
  /// Images with more pixels are refused from their header (vision::ImageDecoder).
  int64_t max_pixels = vision::kDefaultMaxPixels;
};

/// A column as the files hold it and as the samples get it.
struct ParquetColumnInfo {
  std::string name;          ///< The column's (top-level) name: the field's name.
  std::string arrow_type;    ///< Its Arrow type: "int32", "fixed_size_list<item: float>[4]".
  ColumnKind kind = ColumnKind::kTensor;  ///< How it becomes a field.
  at::ScalarType dtype = at::kFloat;  ///< The tensor's element type (not for kText).
  std::vector<int64_t> shape;  ///< One row's shape (kTensor, kImage); {} for a scalar.
  NullPolicy nulls = NullPolicy::kRefuse;  ///< What its nulls become.
  /// How a row gets from the file into the batch: e.g. "copied once from the decoded row
  /// group (runs of consecutive rows in one copy)", "widened from uint16 as it is copied".
  std::string read_path;
};

/// One Parquet file, as its footer described it when the dataset was built.
struct ParquetFileInfo {
  std::string path;     ///< The file.
  int64_t size = 0;     ///< Its size in bytes then.
  int64_t mtime_ns = 0;  ///< Its modification time then, in nanoseconds since the epoch.
  std::vector<int64_t> row_group_rows;  ///< Rows of each row group: one shard each.
};

/// Parquet files as a StreamingDataset: see the file comment.
///
/// Types: int8 to int64, uint8, float16/32/64 and bool keep their type; uint16 and uint32 are
/// widened to int32 and int64; date32 and time32 read as int32, date64, time64, timestamps and
/// durations as int64 (their stored units). Fixed-size lists of those (nested too) are tensors
/// of their shape; variable-length lists are 1-D tensors (ColumnKind::kList); strings, binary
/// and fixed-size binary are text fields; dictionary-encoded columns are decoded. uint64,
/// decimals, maps, structs (but an image's) and lists of strings are refused, naming the column
/// and the file. A dataset with only kTensor and kImage columns declares its layout: every
/// batch is copied into its slot straight from the decoded row groups, and images are decoded
/// straight into it. With a kList or kText column, samples come from get(). Nulls in an image
/// column always fail the batch.
///
/// Readers are opened in the process that reads (a worker), never inherited across a fork.
/// A file whose size or modification time changed since the dataset was built is an error
/// naming it. Not thread-safe: one reading thread per process.
class ParquetShards : public StreamingDataset {
 public:
  /// Reads the footers of `paths`, in this order. Throws OptionError naming the file for an
  /// empty list, a missing or unreadable file, a file that is not Parquet or whose footer is
  /// damaged, a file listed twice, a column missing from a file (listing its columns), a
  /// column whose type differs between files, an unsupported type; and naming the option for
  /// a bad option or an image column that is not binary.
  explicit ParquetShards(std::vector<std::string> paths, ParquetShardsOptions options = {});
  ~ParquetShards() override;
  ParquetShards(const ParquetShards& other);  ///< A copy opens its own readers.
  ParquetShards& operator=(const ParquetShards&) = delete;

  /// Every file of `dir` whose name ends in ".parquet" (not in subfolders), sorted. Throws
  /// OptionError when `dir` is not a readable folder or holds no such file.
  static std::shared_ptr<ParquetShards> from_directory(const std::string& dir,
                                                       ParquetShardsOptions options = {});

  /// Row `index` (global, over every row group of every file) as named tensors and text
  /// fields. Throws mploader::Error naming the file, the row group and the column when a
  /// file cannot be read, changed, or holds a null the policy refuses.
  Sample get(int64_t index) override;
  /// The fields (masks after their columns) when no column is ColumnKind::kList or kText;
  /// nullopt otherwise.
  std::optional<SampleLayout> sample_layout() const override;
  /// Copies row `index` of each column into its place in the batch; decodes images there.
  void write(int64_t index, SampleWriter& out) override;
  /// Copies the batch's rows; runs of consecutive rows of one row group in one copy a column.
  void write_batch(const int64_t* indices, size_t count, BatchWriter& out) override;
  /// Non-empty when `shuffle_buffer` is larger than ParquetShardsOptions::read_ahead.
  std::string shuffle_buffer_warning(int64_t shuffle_buffer) const override;
  /// The files, the options, the footers' counts and the columns: a spawned worker reads no
  /// footer before its first row group.
  std::optional<DatasetRecipe> recipe() const override;
  /// Builds the dataset from recipe()'s text. Throws mploader::Error naming what is wrong.
  static std::shared_ptr<ParquetShards> from_recipe(const std::string& config);

  const std::vector<ParquetFileInfo>& files() const { return files_; }  ///< The files.
  const std::vector<ParquetColumnInfo>& columns() const { return columns_; }  ///< The fields.
  const ParquetShardsOptions& options() const { return options_; }  ///< The options given.
  /// For tests and the bench: row groups this process decoded, and files it opened.
  int64_t row_groups_decoded() const;
  int64_t files_opened() const;  ///< See row_groups_decoded().

 private:
  struct Reading;  // this process's open files and decoded row groups (parquet/pq_reading.h)
  ParquetShards(std::vector<ParquetFileInfo> files, std::vector<ParquetColumnInfo> columns,
                ParquetShardsOptions options);
  void finish_construction();
  Reading& reading();
  void write_rows(const int64_t* indices, size_t count, FieldWriter& out);

  std::vector<ParquetFileInfo> files_;
  std::vector<ParquetColumnInfo> columns_;
  ParquetShardsOptions options_;
  std::vector<size_t> shard_file_;   // the file of each shard
  std::vector<int> shard_group_;     // its row group in that file
  bool has_layout_ = false;
  std::unique_ptr<Reading> reading_;
};

}  // namespace mploader::parquet
