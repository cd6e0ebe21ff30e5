// Types shared by the parts of mploader-bench: one configuration to measure, what one run
// measured, and the entry point of each loader's runner.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace mploader {
class Dataset;
}

namespace bench {

// A bad command-line value. The message names the option and the fix; main exits with 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One configuration: one loader on one workload with one worker count.
struct RunConfig {
  // mploader | mploader-get | mploader-auto | libtorch | inprocess | inprocess-copy | limit |
  // pytorch. mploader-auto runs num_workers and prefetch_factor = kAuto (workers is then -1).
  std::string loader;
  std::string workload;  // synthetic | fmnist | jpeg | stream | tar | io, or a plugin's dataset
  // --dataset-lib, and --dataset-config: the library that registers `workload`, and the text
  // its factory is given (bench/plugin.h). Empty for the built-in workloads.
  std::string dataset_lib;
  std::string dataset_config;
  std::string data_dir;  // fmnist IDX folder
  std::string jpeg_dir;  // jpeg: folder of .jpg files (--data-dir, or the generated set)
  std::string corpus;    // stream: the uint16 token file (bench/workloads/stream_corpus.h)
  std::string tar_dir;   // tar: folder of .tar shards (--data-dir, or the packed set)
  int64_t context = 1024;  // stream: tokens per window
  int64_t io_latency_us = 2000;  // io: each sample's read latency
  int64_t io_cpu_us = 0;         // io: each sample's CPU time besides, spun after the read
  // The training step: the loop holds each batch this long before asking for the next (every
  // loader, PyTorch's included), as a slow consumer does. 0: no step.
  int64_t step_ms = 0;
  std::vector<int64_t> sample_shape;  // synthetic "image" shape
  int64_t workers = 2;
  int64_t batch_size = 64;
  int64_t batches = 200;
  int64_t prefetch = 2;
  std::string shm_dir;  // mploader only; empty = memfd
  std::string start = "fork";  // mploader only: fork | spawn | forkserver
  bool checksum = false;       // mploader only: hash every batch's bytes (touches the data)
  // mploader only: LoaderOptions::crash_dir, timeout and max_restarts_per_epoch.
  std::string crash_dir;   // empty: $MPLOADER_CRASH_DIR, else ./mploader-crashes
  int64_t timeout_ms = 120000;
  int64_t max_restarts = 0;
  // --inject-fault (bench/runners/fault_injection.h): empty for a normal run.
  std::string fault;
  int64_t fault_at_batch = 3;
  int64_t fault_worker = 0;
};

// What one run measured. Rates cover the steady state: the batches after the first.
struct RunResult {
  RunConfig config;
  int64_t dataset_size = 0;
  int64_t batches = 0;
  int64_t samples = 0;       // in all batches
  double first_batch_s = 0;  // loader construction start -> first batch in hand
  double samples_per_s = 0;
  // Over the second half of the batches: after a start that an autotuner spends choosing.
  double second_half_samples_per_s = -1;
  double mb_per_s = 0;       // MB = bytes of all tensors of a batch / 1e6
  // stream: samples_per_s x context, the rate a language model trains at; 0 elsewhere.
  double tokens_per_s() const {
    return config.workload == "stream" ? samples_per_s * static_cast<double>(config.context) : 0;
  }
  double wall_s = 0;         // loader construction start -> last batch in hand
  double teardown_s = 0;     // destroying the loader (workers stopped and joined)
  std::string checksum;      // with --checksum: FNV-1a over the bytes of every batch, in order
  // Time in the loader's next() (or iterator increment) per batch after the first, ms.
  double wait_p50_ms = 0;
  double wait_p99_ms = 0;
  // mploader only (Loader::stats(); -1 elsewhere): sum of worker busy time over workers x
  // the loop's duration; busy ms per batch; head-of-line stall (s) of the whole run.
  double utilisation = -1;
  double busy_ms_per_batch = -1;
  double head_of_line_s = -1;
  // mploader only: the workers' busy ms per batch by stage (read, decode, transform, write,
  // hand-off; mploader::StageTimes), and the share of the busy time they spent on a CPU. Empty
  // and -1 elsewhere.
  std::vector<double> stage_ms_per_batch;
  double on_cpu = -1;
  // jpeg: samples whose file could not be read or decoded (replaced by zeros), and the first
  // few of their dataset indices.
  int64_t corrupt = 0;
  std::vector<int64_t> corrupt_examples;
  // mploader only (-1 elsewhere): epochs begun, the loader's memory-growth warnings, and the
  // most any worker's private memory grew from the end of the first epoch to the end of the
  // run (MiB; -1 with a single epoch): memory that workers kept across epochs.
  int64_t epochs = -1;
  int64_t memory_growth_warnings = -1;
  double worker_private_growth_mb = -1;
  // mploader-auto only (-1 elsewhere): the batch of the autotuner's last change (0: none),
  // its changes, the workers and prefetch it ended with, and samples/s after the last change.
  int64_t settle_batches = -1;
  int64_t autotune_changes = -1;
  int64_t auto_workers = -1;
  int64_t auto_prefetch = -1;
  double settled_samples_per_s = -1;
  std::string note;  // what the runner did differently, e.g. PyTorch's JPEG decoder
};

// Runners. Each constructs its loader, takes config.batches batches (more epochs when one is
// not enough; drop_last, sequential order), touching each batch only lightly, and tears down.
RunResult run_mploader(const RunConfig& config, const std::shared_ptr<mploader::Dataset>& data);
RunResult run_libtorch(const RunConfig& config, const std::shared_ptr<mploader::Dataset>& data);
RunResult run_inprocess(const RunConfig& config, const std::shared_ptr<mploader::Dataset>& data);
RunResult run_limit(const RunConfig& config, const std::shared_ptr<mploader::Dataset>& data);
// Runs pytorch_dataloader.py under the project's Python and parses its JSON lines: rows for
// loader "pytorch" and, where the workload has a batched fetch, "pytorch-getitems".
std::vector<RunResult> run_pytorch(const RunConfig& config);
// Whether run_pytorch can work here; otherwise `reason` says why not, in one line.
bool pytorch_available(std::string& reason);

}  // namespace bench
