// Arrow column types to fields: which types read as which tensors, and the messages for the
// types that do not.
#include "parquet/pq_columns.h"

#include <mploader/errors.h>

#include <arrow/type.h>

namespace mploader::parquet::detail {
namespace {

using arrow::Type;

bool is_text(Type::type id) {
  switch (id) {
    case Type::STRING:
    case Type::LARGE_STRING:
    case Type::STRING_VIEW:
    case Type::BINARY:
    case Type::LARGE_BINARY:
    case Type::BINARY_VIEW:
    case Type::FIXED_SIZE_BINARY:
      return true;
    default:
      return false;
  }
}

bool is_binary(Type::type id) {
  return id == Type::BINARY || id == Type::LARGE_BINARY || id == Type::BINARY_VIEW;
}

// The fix to name for a type that has no tensor: uint64 and decimals have a cast to suggest.
std::string unsupported_fix(const arrow::DataType& type) {
  switch (type.id()) {
    case Type::UINT64:
      return "torch has no arithmetic on uint64: write the column as int64 (values below 2^63) "
             "or leave it out with ParquetShardsOptions::columns";
    case Type::DECIMAL32:
    case Type::DECIMAL64:
    case Type::DECIMAL128:
    case Type::DECIMAL256:
      return "write the column as float64 or as a scaled int64, or leave it out with "
             "ParquetShardsOptions::columns";
    default:
      return "leave it out with ParquetShardsOptions::columns, or write it as numbers, "
             "fixed-size lists of numbers, lists of numbers, strings or binary";
  }
}

[[noreturn]] void refuse(const arrow::Field& field, const std::string& file,
                         const std::string& why, const std::string& fix) {
  throw OptionError("columns", error_prefix(file) + "column '" + field.name() + "' has Arrow "
                    "type " + field.type()->ToString() + ", " + why + ". Fix: " + fix);
}

// Lists of fixed size down to a numeric leaf: the row's shape and element type.
bool plan_tensor(const arrow::DataType& type, ParquetColumnInfo& info) {
  const arrow::DataType* t = &value_type(type);
  while (t->id() == Type::FIXED_SIZE_LIST) {
    const auto& list = static_cast<const arrow::FixedSizeListType&>(*t);
    info.shape.push_back(list.list_size());
    t = list.value_type().get();
  }
  const std::optional<at::ScalarType> dtype = leaf_dtype(*t);
  if (!dtype) return false;
  info.dtype = *dtype;
  return true;
}

std::string tensor_read_path(const arrow::DataType& type, const ParquetColumnInfo& info) {
  const arrow::DataType* leaf = &value_type(type);
  while (leaf->id() == Type::FIXED_SIZE_LIST) {
    leaf = static_cast<const arrow::FixedSizeListType&>(*leaf).value_type().get();
  }
  std::string path;
  if (leaf->id() == Type::BOOL) {
    path = "unpacked from bits as it is copied";
  } else if (leaf->id() == Type::UINT16 || leaf->id() == Type::UINT32) {
    path = "widened from " + leaf->ToString() + " to " + c10::toString(info.dtype) +
           " as it is copied";
  } else {
    path = "copied once from the decoded row group (runs of consecutive rows in one copy)";
  }
  if (type.id() == Type::DICTIONARY) path = "dictionary looked up per row, then " + path;
  return path;
}

void plan_image(const arrow::Field& field, const vision::Compose& compose,
                const std::string& file, ParquetColumnInfo& info) {
  const arrow::DataType& type = *field.type();
  bool ok = is_binary(type.id());
  if (type.id() == Type::STRUCT) {
    const std::shared_ptr<arrow::Field> bytes =
        static_cast<const arrow::StructType&>(type).GetFieldByName("bytes");
    ok = bytes != nullptr && is_binary(bytes->type()->id());
  }
  if (!ok) {
    throw OptionError("image_columns", error_prefix(file) + "image column '" + field.name() +
                      "' has Arrow type " + type.ToString() + ", not binary nor a struct with "
                      "a binary \"bytes\" child. Fix: name a column of encoded JPEG or PNG "
                      "bytes in ParquetShardsOptions::image_columns");
  }
  info.kind = ColumnKind::kImage;
  info.shape = compose.output_shape();
  info.dtype = compose.layout() == vision::PixelLayout::kFloat32CHW ? at::kFloat : at::kByte;
  info.nulls = NullPolicy::kRefuse;
  info.read_path = "decoded and transformed straight into the batch (" + compose.describe() + ")";
}

}  // namespace

std::string error_prefix(const std::string& file) {
  return "mploader: ParquetShards: " + file + ": ";
}

std::optional<at::ScalarType> leaf_dtype(const arrow::DataType& type) {
  switch (type.id()) {
    case Type::INT8: return at::kChar;
    case Type::INT16: return at::kShort;
    case Type::INT32: return at::kInt;
    case Type::INT64: return at::kLong;
    case Type::UINT8: return at::kByte;
    case Type::UINT16: return at::kInt;
    case Type::UINT32: return at::kLong;
    case Type::HALF_FLOAT: return at::kHalf;
    case Type::FLOAT: return at::kFloat;
    case Type::DOUBLE: return at::kDouble;
    case Type::BOOL: return at::kBool;
    case Type::DATE32:
    case Type::TIME32: return at::kInt;
    case Type::DATE64:
    case Type::TIME64:
    case Type::TIMESTAMP:
    case Type::DURATION: return at::kLong;
    default: return std::nullopt;
  }
}

const arrow::DataType& value_type(const arrow::DataType& type) {
  if (type.id() != Type::DICTIONARY) return type;
  return *static_cast<const arrow::DictionaryType&>(type).value_type();
}

ParquetColumnInfo plan_column(const arrow::Field& field, const ParquetShardsOptions& options,
                              const std::string& file) {
  ParquetColumnInfo info;
  info.name = field.name();
  info.arrow_type = field.type()->ToString();
  auto policy = options.column_nulls.find(field.name());
  info.nulls = policy == options.column_nulls.end() ? options.nulls : policy->second;
  if (auto image = options.image_columns.find(field.name());
      image != options.image_columns.end()) {
    plan_image(field, image->second, file, info);
    return info;
  }
  const arrow::DataType& type = value_type(*field.type());
  if (is_text(type.id())) {
    info.kind = ColumnKind::kText;
    info.read_path = "a text field, copied once into the sample by get()";
    return info;
  }
  if (type.id() == Type::LIST || type.id() == Type::LARGE_LIST) {
    const auto& child = *static_cast<const arrow::BaseListType&>(type).value_type();
    const std::optional<at::ScalarType> dtype = leaf_dtype(child);
    if (!dtype || field.type()->id() == Type::DICTIONARY) {
      refuse(field, file, "a list of " + child.ToString() + ", not of numbers",
             "lists of numbers (or of fixed-size lists) are read; " + unsupported_fix(child));
    }
    info.kind = ColumnKind::kList;
    info.dtype = *dtype;
    info.read_path = "a 1-D tensor per row, copied once by get() (collate with pad_collate)";
    return info;
  }
  if (!plan_tensor(*field.type(), info)) {
    refuse(field, file, "which has no tensor type", unsupported_fix(type));
  }
  info.kind = ColumnKind::kTensor;
  info.read_path = tensor_read_path(*field.type(), info);
  return info;
}

std::string column_names(const arrow::Schema& schema) {
  std::string out;
  for (const auto& f : schema.fields()) out += (out.empty() ? "'" : ", '") + f->name() + "'";
  return out.empty() ? "none" : out;
}

const char* kind_name(ColumnKind kind) {
  switch (kind) {
    case ColumnKind::kTensor: return "tensor";
    case ColumnKind::kList: return "list";
    case ColumnKind::kText: return "text";
    case ColumnKind::kImage: return "image";
  }
  return "?";
}

const char* policy_name(NullPolicy policy) {
  switch (policy) {
    case NullPolicy::kRefuse: return "refuse";
    case NullPolicy::kFill: return "fill";
    case NullPolicy::kMask: return "mask";
  }
  return "?";
}

}  // namespace mploader::parquet::detail
