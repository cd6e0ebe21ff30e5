// Runs libtorch's own torch::data DataLoader (worker threads) over the same mploader::Dataset,
// wrapped as a torch::data dataset of Example<>{data, target} (the sample's first two tensors)
// stacked with Stack<>.
// The only file that includes the torch::data headers (they are slow to compile).
#include "bench/run_config.h"
#include "bench/run_timer.h"
#include "bench/workloads/jpeg_dataset.h"

#include <mploader/dataset.h>

#include <torch/data/dataloader.h>
#include <torch/data/datasets/base.h>
#include <torch/data/datasets/map.h>
#include <torch/data/samplers/sequential.h>
#include <torch/data/transforms/stack.h>

#include <stdexcept>

namespace bench {

namespace {

// get(i) -> Example<>{first tensor, second tensor} of the sample: ("image", "label"), or the
// stream workload's ("input", "target"). Copies share the mploader::Dataset, which is safe for
// concurrent get().
class DatasetAdapter : public torch::data::datasets::Dataset<DatasetAdapter> {
 public:
  explicit DatasetAdapter(std::shared_ptr<mploader::Dataset> data) : data_(std::move(data)) {}
  torch::data::Example<> get(size_t index) override {
    mploader::Sample s = data_->get(static_cast<int64_t>(index));
    if (s.size() < 2) {
      throw std::runtime_error("libtorch: a sample has " + std::to_string(s.size()) +
                               " tensors; Example<> needs two (data, target)");
    }
    auto second = s.begin();
    ++second;
    return {s.begin()->second, second->second};
  }
  torch::optional<size_t> size() const override { return data_->size(); }

 private:
  std::shared_ptr<mploader::Dataset> data_;
};

torch::data::DataLoaderOptions libtorch_options(const RunConfig& config) {
  torch::data::DataLoaderOptions options(static_cast<size_t>(config.batch_size));
  options.workers(static_cast<size_t>(config.workers)).drop_last(true);
  if (config.workers > 0) options.max_jobs(static_cast<size_t>(config.prefetch * config.workers));
  return options;
}

}  // namespace

RunResult run_libtorch(const RunConfig& config, const std::shared_ptr<mploader::Dataset>& data) {
  using torch::data::samplers::SequentialSampler;
  RunTimer timer(config);
  auto loader = torch::data::make_data_loader<SequentialSampler>(
      DatasetAdapter(data).map(torch::data::transforms::Stack<>()), libtorch_options(config));
  // Each pass over *loader is an epoch; the dataset loads in this process and learns its epoch
  // only from us (jpeg augmentation), before begin() hands out the pass's first jobs.
  for (uint64_t epoch = 0; timer.batches() < config.batches; ++epoch) {
    set_loading_epoch(*data, epoch);
    const int64_t before = timer.batches();
    timer.waiting();
    for (torch::data::Example<>& b : *loader) {
      timer.batch(b.data.size(0), tensor_bytes(b.data) + tensor_bytes(b.target));
      if (timer.batches() == config.batches) break;
      timer.waiting();
    }
    if (timer.batches() == before) {
      throw std::runtime_error("libtorch: an epoch gave no batch (dataset smaller than a batch?)");
    }
  }
  timer.loop_done();
  loader.reset();
  timer.torn_down();
  return timer.finish(config, data->size());
}

}  // namespace bench
