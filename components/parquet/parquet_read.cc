// ParquetShards' reads: get() builds a sample of every kind of column; write() and
// write_batch() copy tensor columns into the batch and decode image columns there.
#include <mploader/parquet/parquet_shards.h>

#include "core/loading_scope.h"
#include "parquet/pq_reading.h"
#include "parquet/pq_rows.h"
#include "util/errors.h"

#include <mploader/errors.h>

#include <mploader/sample_writer.h>

#include <ATen/ATen.h>

#include <stdexcept>

namespace mploader::parquet {
namespace {

void refuse_without_layout(const std::string& file) {
  throw Error(mploader::detail::message("ParquetShards",
                                       file + ": it has list or text columns, so it has no "
                                              "layout; write() and write_batch() are not for it",
                                       "Call get()"));
}

}  // namespace

std::optional<SampleLayout> ParquetShards::sample_layout() const {
  if (!has_layout_) return std::nullopt;
  SampleLayout layout;
  for (const ParquetColumnInfo& c : columns_) {
    layout.push_back({c.name, c.dtype, c.shape});
    if (c.nulls == NullPolicy::kMask && c.kind == ColumnKind::kTensor) {
      layout.push_back({c.name + "_valid", at::kBool, {}});
    }
  }
  return layout;
}

Sample ParquetShards::get(int64_t index) {
  const ShardPosition pos = locate(index);
  Reading& r = reading();
  DecodedGroup& group = r.decoded(pos.shard, shard_file_[pos.shard], shard_group_[pos.shard]);
  r.served(group, pos.sample, 1);
  const detail::RowPlace at{&files_[shard_file_[pos.shard]], shard_group_[pos.shard], pos.sample,
                            index};
  Sample out;
  for (size_t k = 0; k < columns_.size(); ++k) {
    const ParquetColumnInfo& c = columns_[k];
    const detail::ColumnData& data = group.columns[k];
    bool valid = true;
    switch (c.kind) {
      case ColumnKind::kTensor: {
        at::Tensor t = at::empty(c.shape, c.dtype);
        uint8_t mask = 1;
        detail::write_tensor_rows(data, c, options_.null_fill, at, 1,
                                  static_cast<uint8_t*>(t.data_ptr()), &mask);
        valid = mask != 0;
        out.set(c.name, std::move(t));
        break;
      }
      case ColumnKind::kImage: {
        at::Tensor t = at::empty(c.shape, c.dtype);
        detail::write_image_row(data, c, options_.image_columns.at(c.name), at,
                                mploader::detail::context_sample_seed(index),
                                {r.decoder, r.image, r.scratch},
                                static_cast<uint8_t*>(t.data_ptr()));
        out.set(c.name, std::move(t));
        break;
      }
      case ColumnKind::kList:
        out.set(c.name, detail::list_row(data, c, options_.null_fill, at, valid));
        break;
      case ColumnKind::kText: {
        const std::string_view text = detail::text_row(data, c, at, valid);
        out.set_bytes(c.name, text.data(), text.size());
        break;
      }
    }
    if (c.nulls == NullPolicy::kMask && c.kind != ColumnKind::kImage) {
      out.set(c.name + "_valid", at::scalar_tensor(valid, at::kBool));
    }
  }
  return out;
}

void ParquetShards::write(int64_t index, SampleWriter& out) { write_rows(&index, 1, out); }

void ParquetShards::write_batch(const int64_t* indices, size_t count, BatchWriter& out) {
  write_rows(indices, count, out);
}

// Row i of the batch goes to row i of each field. Consecutive indices within one row group
// are one run: one copy a tensor column.
void ParquetShards::write_rows(const int64_t* indices, size_t count, FieldWriter& out) {
  if (!has_layout_) refuse_without_layout(files_.front().path);
  std::vector<uint8_t*> base(columns_.size()), mask(columns_.size(), nullptr);
  std::vector<size_t> row_bytes(columns_.size());
  for (size_t k = 0, field = 0; k < columns_.size(); ++k, ++field) {
    row_bytes[k] = out.field(field).nbytes();
    base[k] = static_cast<uint8_t*>(out.bytes(field));
    if (columns_[k].nulls == NullPolicy::kMask && columns_[k].kind == ColumnKind::kTensor) {
      mask[k] = static_cast<uint8_t*>(out.bytes(++field));
    }
  }
  Reading& r = reading();
  for (size_t i = 0; i < count;) {
    const ShardPosition pos = locate(indices[i]);
    const int64_t left = shards()[pos.shard].num_samples - pos.sample;
    int64_t run = 1;
    while (i + run < count && run < left && indices[i + run] == indices[i] + run) ++run;
    DecodedGroup& group = r.decoded(pos.shard, shard_file_[pos.shard], shard_group_[pos.shard]);
    r.served(group, pos.sample, run);
    const detail::RowPlace at{&files_[shard_file_[pos.shard]], shard_group_[pos.shard],
                              pos.sample, indices[i]};
    for (size_t k = 0; k < columns_.size(); ++k) {
      const ParquetColumnInfo& c = columns_[k];
      uint8_t* dst = base[k] + i * row_bytes[k];
      if (c.kind == ColumnKind::kTensor) {
        detail::write_tensor_rows(group.columns[k], c, options_.null_fill, at, run, dst,
                                  mask[k] ? mask[k] + i : nullptr);
        continue;
      }
      for (int64_t j = 0; j < run; ++j) {
        detail::RowPlace row = at;
        row.row += j;
        row.global += j;
        detail::write_image_row(group.columns[k], c, options_.image_columns.at(c.name), row,
                                mploader::detail::context_sample_seed(row.global),
                                {r.decoder, r.image, r.scratch},
                                dst + j * row_bytes[k]);
      }
    }
    i += static_cast<size_t>(run);
  }
}

}  // namespace mploader::parquet
