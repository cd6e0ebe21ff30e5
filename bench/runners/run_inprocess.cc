// The in-process ideal: the same per-sample work done by the same number of threads straight
// into preallocated batch memory, with no processes, no IPC and no queue. A workload that
// writes in place (sample_layout()) writes its rows there, as mploader's workers do; any other
// is read with get() and copied, as mploader's collation does; loader "inprocess-copy" always
// does that (the ideal as it was before in-place writes). The reference point for what the
// loading work itself costs. `workers` threads do the work
// (the calling thread and workers - 1 helpers, so no thread sits waiting); workers == 0 and
// workers == 1 both load in the calling thread alone.
#include "bench/run_config.h"
#include "bench/run_timer.h"
#include "bench/runners/fill_pool.h"
#include "bench/workloads/jpeg_dataset.h"

#include <mploader/dataset.h>

#include <ATen/ops/empty.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <vector>

namespace bench {

namespace {

// One named tensor of the reused batch.
struct Column {
  std::string name;
  at::Tensor batch;  // [B, sample shape...]
  int64_t sample_bytes = 0;
};

std::vector<Column> make_columns(const mploader::Sample& probe, int64_t batch_size) {
  std::vector<Column> columns;
  for (const auto& [name, t] : probe) {
    std::vector<int64_t> shape{batch_size};
    shape.insert(shape.end(), t.sizes().begin(), t.sizes().end());
    columns.push_back({name, at::empty(shape, t.scalar_type()), tensor_bytes(t)});
  }
  return columns;
}

// The light touch every runner gives a batch: the row count of its first tensor ("image", or
// the stream workload's "input").
int64_t image_rows(const std::vector<Column>& columns) {
  if (columns.empty()) throw std::runtime_error("inprocess: the samples have no tensor");
  return columns.front().batch.size(0);
}

// Copies one sample into row `row` of every column.
void copy_sample(const mploader::Sample& sample, std::vector<Column>& columns, int64_t row) {
  for (Column& c : columns) {
    const at::Tensor t = sample[c.name].contiguous();
    if (t.scalar_type() != c.batch.scalar_type() || t.sizes() != c.batch.sizes().slice(1)) {
      throw std::runtime_error("inprocess: sample tensor '" + c.name +
                               "' differs in dtype or shape from the first sample");
    }
    std::memcpy(static_cast<char*>(c.batch.data_ptr()) + row * c.sample_bytes, t.data_ptr(),
                static_cast<size_t>(c.sample_bytes));
  }
}

// Rows per work item of the in-place fill: each item is one write_batch() over a run of rows
// (one gather for in-memory data), small enough that threads stay balanced.
constexpr int64_t kRowsPerItem = 8;

std::vector<Column> columns_of(const mploader::SampleLayout& fields, int64_t batch_size) {
  std::vector<Column> columns;
  for (const mploader::FieldLayout& f : fields) {
    std::vector<int64_t> shape{batch_size};
    shape.insert(shape.end(), f.shape.begin(), f.shape.end());
    columns.push_back({f.name, at::empty(shape, f.dtype), static_cast<int64_t>(f.nbytes())});
  }
  return columns;
}

// Writes rows [first_row, first_row + rows) of the batch in place: the same path as mploader's
// workers take when the workload declares its layout, into the batch's own memory.
void write_rows(mploader::Dataset& data, const mploader::SampleLayout& fields,
                std::vector<Column>& columns, int64_t first_index, int64_t first_row,
                int64_t rows) {
  std::vector<int64_t> indices(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) indices[static_cast<size_t>(r)] = first_index + first_row + r;
  std::vector<uint8_t*> bases;
  std::vector<size_t> bytes;
  for (Column& c : columns) {
    bases.push_back(static_cast<uint8_t*>(c.batch.data_ptr()) + first_row * c.sample_bytes);
    bytes.push_back(static_cast<size_t>(c.sample_bytes));
  }
  mploader::BatchWriter writer(fields, bases.data(), bytes.data(), indices.size());
  data.write_batch(indices.data(), indices.size(), writer);
  writer.check_complete();
}

}  // namespace

RunResult run_inprocess(const RunConfig& config, const std::shared_ptr<mploader::Dataset>& data) {
  const int64_t per_epoch = static_cast<int64_t>(data->size()) / config.batch_size;
  if (per_epoch == 0) throw std::runtime_error("inprocess: the dataset is smaller than a batch");
  RunTimer timer(config);
  {
    const std::optional<mploader::SampleLayout> fields =
        config.loader == "inprocess-copy" ? std::nullopt : data->sample_layout();
    std::vector<Column> columns = fields ? columns_of(*fields, config.batch_size)
                                         : make_columns(data->get(0), config.batch_size);
    FillPool pool(std::max<int64_t>(config.workers - 1, 0));
    int64_t first_index = 0;
    const std::function<void(int64_t)> copy_row = [&](int64_t row) {
      copy_sample(data->get(first_index + row), columns, row);
    };
    const std::function<void(int64_t)> write_item = [&](int64_t item) {
      const int64_t first_row = item * kRowsPerItem;
      write_rows(*data, *fields, columns, first_index, first_row,
                 std::min(kRowsPerItem, config.batch_size - first_row));
    };
    const int64_t items = fields ? (config.batch_size + kRowsPerItem - 1) / kRowsPerItem
                                 : config.batch_size;
    for (int64_t b = 0; b < config.batches; ++b) {
      first_index = (b % per_epoch) * config.batch_size;
      if (first_index == 0) set_loading_epoch(*data, static_cast<uint64_t>(b / per_epoch));
      timer.waiting();
      pool.run(items, fields ? write_item : copy_row);
      int64_t bytes = 0;
      for (const Column& c : columns) bytes += tensor_bytes(c.batch);
      timer.batch(image_rows(columns), bytes);
    }
    timer.loop_done();
  }
  timer.torn_down();
  return timer.finish(config, data->size());
}

}  // namespace bench
