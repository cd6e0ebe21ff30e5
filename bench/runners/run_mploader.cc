// Runs mploader::Loader (worker processes, shared-memory rings) over the workload, with the
// dataset wrapped by fault_injection.h when --inject-fault asks for a fault.
#include "bench/run_config.h"
#include "bench/run_timer.h"
#include "bench/runners/fault_injection.h"
#include "bench/workloads/jpeg_dataset.h"

#include <mploader/loader.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

namespace bench {

namespace {

mploader::LoaderOptions loader_options(const RunConfig& config) {
  mploader::LoaderOptions options;
  options.batch_size = config.batch_size;
  const bool autotuned = config.loader == "mploader-auto";
  options.num_workers = autotuned ? mploader::kAuto : config.workers;
  options.prefetch_factor = autotuned ? mploader::kAuto : config.prefetch;
  options.shuffle = false;
  options.drop_last = true;
  options.in_order = true;
  options.shm_dir = config.shm_dir;
  // By default only so that a hung loader ends the run with TimeoutError instead of hanging
  // the bench (120 s).
  options.timeout = std::chrono::milliseconds(config.timeout_ms);
  options.crash_dir = config.crash_dir;
  options.max_restarts_per_epoch = config.max_restarts;
  // Workers live across epochs, as PyTorch's do in bench/pytorch_dataloader.py.
  options.persistent_workers = true;
  options.start_method = config.start == "spawn"        ? mploader::StartMethod::kSpawn
                         : config.start == "forkserver" ? mploader::StartMethod::kForkserver
                                                        : mploader::StartMethod::kFork;
  return options;
}

// FNV-1a over every byte of every tensor of the batch, continuing `hash`.
uint64_t hash_batch(const mploader::Batch& batch, uint64_t hash) {
  for (const auto& item : batch.tensors()) {
    const auto* bytes = static_cast<const uint8_t*>(item.second.data_ptr());
    for (int64_t i = 0; i < tensor_bytes(item.second); ++i) {
      hash = (hash ^ bytes[i]) * 1099511628211ULL;
    }
  }
  return hash;
}

FaultSpec fault_spec(const RunConfig& config) {
  FaultSpec spec;
  spec.kind = config.fault;
  spec.at_batch = config.fault_at_batch;
  spec.worker = config.fault_worker;
  spec.batch_size = config.batch_size;
  spec.shm_dir = config.shm_dir;
  return spec;
}

int64_t batch_bytes(const mploader::Batch& batch) {
  int64_t bytes = 0;
  for (const auto& item : batch.tensors()) bytes += tensor_bytes(item.second);
  return bytes;
}

// Worker utilisation and head-of-line stall from the loader's own counters.
void add_stats(const mploader::LoaderStats& stats, double loop_s, RunResult& result) {
  result.head_of_line_s = static_cast<double>(stats.head_of_line_ns) / 1e9;
  // Files the dataset skipped (the jpeg workload's corrupt ones), with examples.
  result.corrupt += static_cast<int64_t>(stats.skipped_samples);
  for (const mploader::SkippedSample& s : stats.skipped) {
    if (result.corrupt_examples.size() >= 5) break;
    result.corrupt_examples.push_back(s.index);
  }
  if (stats.workers.empty() || loop_s <= 0) return;
  uint64_t busy_ns = 0, batches = 0, cpu_ns = 0;
  mploader::StageTimes stages;
  for (const mploader::WorkerStats& w : stats.workers) {
    busy_ns += w.busy_ns;
    batches += w.batches;
    cpu_ns += w.cpu_ns;
    stages += w.stages;
  }
  result.utilisation = static_cast<double>(busy_ns) / 1e9 / (loop_s * stats.workers.size());
  if (batches == 0) return;
  const auto per_batch = [&](uint64_t ns) { return static_cast<double>(ns) / 1e6 / batches; };
  result.busy_ms_per_batch = per_batch(busy_ns);
  result.stage_ms_per_batch = {per_batch(stages.read_ns), per_batch(stages.decode_ns),
                               per_batch(stages.transform_ns), per_batch(stages.write_ns),
                               per_batch(stages.handoff_ns)};
  if (busy_ns > 0) {
    result.on_cpu = std::min(1.0, static_cast<double>(cpu_ns) / static_cast<double>(busy_ns));
  }
}

// The workload as it was before in-place writes: get() alone, each sample then copied into the
// slot by collation (loader "mploader-get", to compare the two paths in one run). It has no
// recipe, so it runs with --start fork only.
class GetOnly : public mploader::Dataset {
 public:
  explicit GetOnly(std::shared_ptr<mploader::Dataset> data) : data_(std::move(data)) {}
  size_t size() const override { return data_->size(); }
  mploader::Sample get(int64_t index) override { return data_->get(index); }

 private:
  std::shared_ptr<mploader::Dataset> data_;
};

std::shared_ptr<mploader::Dataset> dataset_for(const RunConfig& config,
                                               const std::shared_ptr<mploader::Dataset>& data) {
  std::shared_ptr<mploader::Dataset> d = data;
  if (config.loader == "mploader-get") d = std::make_shared<GetOnly>(data);
  return config.fault.empty() ? d : inject_fault(d, fault_spec(config));
}

// Each worker's private memory at the start of the epoch (-1 where not sampled).
std::vector<int64_t> private_memory_at_epoch_start(const mploader::LoaderStats& stats) {
  std::vector<int64_t> bytes;
  for (const mploader::WorkerStats& w : stats.workers) {
    bytes.push_back(w.memory.private_start_bytes);
  }
  return bytes;
}

// Memory workers kept across epochs: the most one grew from `epoch1_start` (the sample the
// loader takes at the start of epoch 1) to the end.
void add_memory(const mploader::LoaderStats& stats, const std::vector<int64_t>& epoch1_start,
                uint64_t epochs, RunResult& result) {
  result.epochs = static_cast<int64_t>(epochs);
  result.memory_growth_warnings = static_cast<int64_t>(stats.memory_growth_warnings);
  for (size_t w = 0; w < stats.workers.size() && w < epoch1_start.size(); ++w) {
    const int64_t now = stats.workers[w].memory.private_bytes;
    if (now < 0 || epoch1_start[w] < 0) continue;
    result.worker_private_growth_mb = std::max(
        result.worker_private_growth_mb, static_cast<double>(now - epoch1_start[w]) / (1 << 20));
  }
}

// Where the autotuner ended, and the rate once it had.
void add_autotune(const mploader::LoaderStats& stats, const RunTimer& timer, RunResult& result) {
  result.autotune_changes = static_cast<int64_t>(stats.autotune.size());
  result.settle_batches =
      stats.autotune.empty() ? 0 : static_cast<int64_t>(stats.autotune.back().batch);
  result.auto_workers = stats.workers_running;
  result.auto_prefetch = stats.prefetch_factor;
  result.settled_samples_per_s = timer.samples_per_s_after(result.settle_batches);
  if (result.settled_samples_per_s < 0 || result.settle_batches * 10 > result.batches * 9) {
    result.note = "the autotuner changed the count until the last tenth of the run; its "
                  "settled rate needs more --batches";
  }
}

}  // namespace

RunResult run_mploader(const RunConfig& config, const std::shared_ptr<mploader::Dataset>& data) {
  RunTimer timer(config);
  auto loader = std::make_unique<mploader::Loader>(dataset_for(config, data),
                                                   loader_options(config));
  int empty_in_a_row = 0;  // nullopt ends an epoch; the next call starts the next one
  uint64_t checksum = 14695981039346656037ULL;
  // With num_workers = 0 the dataset loads here and learns its epoch only from us.
  uint64_t epoch = 0;
  std::vector<int64_t> epoch1_start;
  set_loading_epoch(*data, epoch);
  while (timer.batches() < config.batches) {
    timer.waiting();
    std::optional<mploader::Batch> b = loader->next();
    if (!b) {
      if (++empty_in_a_row > 1) {
        throw std::runtime_error("mploader: an epoch gave no batch (dataset smaller than a batch?)");
      }
      loader->set_epoch(++epoch);
      set_loading_epoch(*data, epoch);
      continue;
    }
    empty_in_a_row = 0;
    if (epoch == 1 && epoch1_start.empty()) {
      epoch1_start = private_memory_at_epoch_start(loader->stats());
    }
    if (config.checksum) checksum = hash_batch(*b, checksum);
    // The rows of the batch's first tensor: "image", or the stream workload's "input".
    timer.batch(b->tensors().begin()->second.size(0), batch_bytes(*b));
  }
  timer.loop_done();
  const mploader::LoaderStats stats = loader->stats();
  loader.reset();
  timer.torn_down();
  RunResult result = timer.finish(config, data->size());
  add_stats(stats, timer.loop_s(), result);
  add_memory(stats, epoch1_start, epoch + 1, result);
  if (config.loader == "mploader-auto") add_autotune(stats, timer, result);
  if (config.checksum) {
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(checksum));
    result.checksum = hex;
  }
  return result;
}

}  // namespace bench
