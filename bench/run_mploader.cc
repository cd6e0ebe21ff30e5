// Runs mploader::Loader (worker processes, shared-memory rings) over the workload.
#include "run_config.h"
#include "run_timer.h"

#include <mploader/loader.h>

#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>

namespace bench {

namespace {

mploader::LoaderOptions loader_options(const RunConfig& config) {
  mploader::LoaderOptions options;
  options.batch_size = config.batch_size;
  options.num_workers = config.workers;
  options.prefetch_factor = config.prefetch;
  options.shuffle = false;
  options.drop_last = true;
  options.in_order = true;
  options.shm_dir = config.shm_dir;
  // Only so that a hung loader ends the run with TimeoutError instead of hanging the bench.
  options.timeout = std::chrono::seconds(120);
  return options;
}

int64_t batch_bytes(const mploader::Batch& batch) {
  int64_t bytes = 0;
  for (const auto& item : batch.tensors()) bytes += tensor_bytes(item.second);
  return bytes;
}

}  // namespace

RunResult run_mploader(const RunConfig& config, const std::shared_ptr<mploader::Dataset>& data) {
  RunTimer timer;
  auto loader = std::make_unique<mploader::Loader>(data, loader_options(config));
  int empty_in_a_row = 0;  // nullopt ends an epoch; the next call starts the next one
  while (timer.batches() < config.batches) {
    std::optional<mploader::Batch> b = loader->next();
    if (!b) {
      if (++empty_in_a_row > 1) {
        throw std::runtime_error("mploader: an epoch gave no batch (dataset smaller than a batch?)");
      }
      continue;
    }
    empty_in_a_row = 0;
    timer.batch((*b)["image"].size(0), batch_bytes(*b));
  }
  timer.loop_done();
  loader.reset();
  timer.torn_down();
  RunResult result{config};
  result.dataset_size = static_cast<int64_t>(data->size());
  timer.finish(result);
  return result;
}

}  // namespace bench
