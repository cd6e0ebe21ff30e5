// mploader-bench command line: CLI11 reads every option as text; the parsers here check it so
// that each mistake gets one line that names the option and says how to fix it.
#include "bench/cli.h"

#include "bench/runners/fault_injection.h"
#include "bench/workload_registry.h"
#include "bench/workloads/fmnist_idx.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sys/stat.h>

#include <utility>

namespace bench {

namespace {

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    parts.push_back(text.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) return parts;
    start = comma + 1;
  }
}

std::string join(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ",") + n;
  return s;
}

// Sizes above this are surely typos (and would overflow byte counts).
constexpr int64_t kMaxCount = int64_t{1} << 31;

}  // namespace

int64_t parse_count(const std::string& option, const std::string& text, int64_t min,
                    const std::string& example) {
  const std::string want = "give a whole number >= " + std::to_string(min) + ", e.g. " +
                           option + " " + example;
  if (text.empty() || text.find_first_not_of("-+0123456789") != std::string::npos) {
    throw UsageError(option + ": '" + text + "' is not a whole number; " + want);
  }
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (*end != '\0') throw UsageError(option + ": '" + text + "' is not a whole number; " + want);
  if (errno == ERANGE || v > kMaxCount) {
    throw UsageError(option + ": " + text + " is too large (at most 2^31); " + want);
  }
  if (v < min) {
    throw UsageError(option + ": " + text + (v < 0 ? " is negative; " : " is too small; ") + want);
  }
  return v;
}

std::vector<int64_t> parse_count_list(const std::string& option, const std::string& text,
                                      int64_t min, const std::string& example) {
  const std::string want = "give whole numbers >= " + std::to_string(min) +
                           " separated by commas, e.g. " + option + " " + example;
  if (text.empty()) throw UsageError(option + ": empty list; " + want);
  std::vector<int64_t> values;
  for (const std::string& part : split(text)) {
    if (part.empty()) throw UsageError(option + ": '" + text + "' has an empty item; " + want);
    const int64_t v = parse_count(option, part, min, example);
    if (std::find(values.begin(), values.end(), v) != values.end()) {
      throw UsageError(option + ": " + part + " is listed twice; " + want);
    }
    values.push_back(v);
  }
  return values;
}

std::vector<std::string> parse_name_list(const std::string& option, const std::string& text,
                                         const std::vector<std::string>& allowed) {
  const std::string want = "use one or more of " + join(allowed) + ", separated by commas";
  if (text.empty()) throw UsageError(option + ": empty list; " + want);
  std::vector<std::string> names;
  for (const std::string& part : split(text)) {
    if (std::find(allowed.begin(), allowed.end(), part) == allowed.end()) {
      throw UsageError(option + ": unknown value '" + part + "'; " + want);
    }
    if (std::find(names.begin(), names.end(), part) != names.end()) {
      throw UsageError(option + ": '" + part + "' is listed twice; " + want);
    }
    names.push_back(part);
  }
  return names;
}

namespace {

// The option values as text, with their defaults.
struct RawOptions {
  std::string workload = "fmnist";
  bool workload_given = false;
  std::string dataset_lib;  // --dataset-lib, --dataset, --dataset-config: a plugin's dataset
  std::string dataset;
  std::string dataset_config;
  std::string data_dir;  // empty: the workload's default
  std::string jpeg_count = "2000";
  std::string csv;
  std::string plot;
  std::string sample_shape = "3,224,224";
  std::string context = "1024";
  std::string io_latency_us = "2000";
  std::string io_cpu_us = "0";
  std::string step_ms = "0";
  std::string workers = "2";
  std::string batch_size = "64";
  std::string batches = "200";
  std::string prefetch = "2";
  // The [sweep] section of a --config file (or `sweep --workers ...`): used where the option
  // itself is not given.
  std::string sweep_workers, sweep_prefetch, sweep_batch_size;
  std::string loader = "mploader,libtorch,inprocess,limit";
  std::string shm_dir;
  std::string start = "fork";
  bool checksum = false;
  bool autotune = false;
  std::string repeat = "1";
  bool json = false;
  std::string crash_dir;
  std::string timeout_ms;  // empty: 120000, or 2000 with --inject-fault hang
  std::string max_restarts = "0";
  std::string inject_fault;
  std::string fault_at_batch;  // empty: 3
  std::string fault_worker;    // empty: 0
};

// mploader's crash handling, and faults to exercise it.
void add_fault_options(CLI::App& app, RawOptions& raw) {
  app.add_option("--crash-dir", raw.crash_dir, "folder for mploader's crash reports (default: "
                 "$MPLOADER_CRASH_DIR, else ./mploader-crashes)");
  app.add_option("--timeout-ms", raw.timeout_ms, "mploader's longest wait for a batch, 0 for "
                 "none (default: 120000; 2000 with --inject-fault hang)");
  app.add_option("--max-restarts", raw.max_restarts, "dead mploader workers replaced per epoch "
                 "before WorkerCrashed")->capture_default_str();
  app.add_option("--inject-fault", raw.inject_fault, "make one mploader worker fail for real: "
                 "segv, bus, fpe, abort, oom (run it under a memory limit), kill, exit, "
                 "exception or hang");
  app.add_option("--fault-at-batch", raw.fault_at_batch, "the fault fires at the first sample "
                 "of the first batch from this one on that the worker loads (default: 3)");
  app.add_option("--fault-worker", raw.fault_worker, "the worker id that fails (default: 0)");
}

void add_options(CLI::App& app, RawOptions& raw) {
  std::string own;
  for (const std::string& name : own_workload_names()) own += (own.empty() ? "" : ", ") + name;
  app.add_option("--workload", raw.workload, "synthetic, fmnist, jpeg, stream, tar or io (a comma "
                 "list sweeps)" + (own.empty() ? std::string() : "; " + own + " have options "
                 "of their own: --workload NAME --help"))
      ->capture_default_str();
  app.add_option("--dataset-lib", raw.dataset_lib, "a shared library of your datasets, built "
                 "with mploader_add_dataset_plugin; with --dataset, instead of --workload");
  app.add_option("--dataset", raw.dataset, "the name a --dataset-lib dataset is registered "
                 "under (MPLOADER_REGISTER_DATASET)");
  app.add_option("--dataset-config", raw.dataset_config, "the text the --dataset factory is "
                 "given (default: empty)");
  app.add_option("--data-dir", raw.data_dir, "fmnist: folder with the Fashion-MNIST "
                 "*-ubyte.gz files (default /usr/share/datasets/fashion-mnist); jpeg: a folder "
                 "of class folders of .jpg/.png files, as torchvision's ImageFolder (default: a "
                 "set generated once from "
                 "Fashion-MNIST in ~/.cache/mploader-bench, or $MPLOADER_BENCH_CACHE); tar: a "
                 "folder of WebDataset .tar shards of <key>.jpg + <key>.cls samples (default: "
                 "the generated jpeg set packed into 8 tars beside it)");
  app.add_option("--jpeg-count", raw.jpeg_count, "images in the generated jpeg set")
      ->capture_default_str();
  app.add_option("--csv", raw.csv, "also write the results to this CSV file");
  app.add_option("--plot", raw.plot, "draw samples/s against num_workers into this PNG (with "
                 "gnuplot; FILE.gp and FILE.dat are written next to it in any case)");
  app.add_option("--sample-shape", raw.sample_shape, "shape of a synthetic uint8 image")
      ->capture_default_str();
  app.add_option("--context", raw.context, "stream: tokens per (input, target) window of the "
                 "byte-level corpus made from /usr/share/doc/*/copyright and "
                 "/usr/share/common-licenses")->capture_default_str();
  app.add_option("--io-latency-us", raw.io_latency_us, "io: each sample's read latency, a "
                 "blocking read that keeps the worker off the CPU")->capture_default_str();
  app.add_option("--io-cpu-us", raw.io_cpu_us, "io: each sample's CPU time besides its read, "
                 "spun on the worker's thread clock")->capture_default_str();
  app.add_option("--step-ms", raw.step_ms, "the training step: how long the loop holds each "
                 "batch before asking for the next (a slow consumer)")->capture_default_str();
  app.add_option("--workers", raw.workers, "worker count; a comma list sweeps, e.g. 0,1,2,4")
      ->capture_default_str();
  app.add_option("--batch-size", raw.batch_size, "samples per batch; a comma list sweeps")
      ->capture_default_str();
  app.add_option("--batches", raw.batches, "batches per configuration (>= 2; the first "
                 "counts only for first_batch_s)")->capture_default_str();
  app.add_option("--prefetch", raw.prefetch, "batches in flight per worker; a comma list sweeps")
      ->capture_default_str();
  app.add_option("--loader", raw.loader,
                 "comma list of mploader, mploader-get, libtorch, inprocess, inprocess-copy, "
                 "limit, pytorch")
      ->capture_default_str();
  app.add_flag("--json", raw.json, "one JSON object per configuration per line on stdout");
  app.add_option("--shm-dir", raw.shm_dir, "tmpfs folder for mploader's rings (default: memfd)");
  app.add_option("--start", raw.start, "how mploader starts workers: fork, spawn or forkserver")
      ->capture_default_str();
  app.add_flag("--autotune", raw.autotune, "add a run per workload and batch size of mploader "
               "tuning itself (num_workers and prefetch_factor = kAuto: loader mploader-auto), "
               "set against the best fixed mploader row");
  app.add_option("--repeat", raw.repeat, "runs of each configuration; the run with the median "
                 "samples/s is reported (default 1)");
  app.add_flag("--checksum", raw.checksum, "hash the bytes of every mploader batch (to compare "
               "start methods; it touches the data, so rates drop)");
  add_fault_options(app, raw);
  // A TOML section is a CLI11 subcommand: [sweep] in a config file lands here.
  CLI::App* sweep = app.add_subcommand("sweep", "sweep lists, as the [sweep] section of a "
                                       "--config file: workers, prefetch, batch-size")
                        ->configurable()
                        ->fallthrough();
  sweep->add_option("--workers", raw.sweep_workers, "comma list of worker counts");
  sweep->add_option("--prefetch", raw.sweep_prefetch, "comma list of prefetch factors");
  sweep->add_option("--batch-size", raw.sweep_batch_size, "comma list of batch sizes");
  // Any option above may also come from a TOML file (see configs/); the command line wins.
  app.set_config("--config", "", "read options from a TOML file, e.g. configs/synthetic.toml");
  app.allow_config_extras(false);  // a misspelt key is an error, not silently ignored
}

std::vector<int64_t> parse_shape(const std::string& text) {
  const std::string want = "give sizes >= 1 separated by commas, e.g. --sample-shape 3,224,224";
  std::vector<int64_t> shape;
  int64_t elements = 1;
  for (const std::string& part : split(text)) {
    try {
      shape.push_back(parse_count("--sample-shape", part, 1, "3"));
    } catch (const UsageError&) {
      throw UsageError("--sample-shape: '" + text + "' is not a shape; " + want);
    }
    elements *= shape.back();
    if (elements > (int64_t{1} << 30)) {
      throw UsageError("--sample-shape: " + text + " is over 2^30 bytes per sample; " + want);
    }
  }
  return shape;
}

bool has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Memory that grows with --batches: refuse a count the bench cannot hold up front, instead of
// std::bad_alloc in the middle of a sweep.
constexpr int64_t kMaxBatches = 10'000'000;  // one wait time (8 bytes) kept per batch
constexpr int64_t kMaxSyntheticSamples = int64_t{1} << 25;  // an index (8 bytes) per sample

void check_batches(const Plan& plan) {
  const int64_t batches = plan.base.batches;
  if (batches > kMaxBatches) {
    throw UsageError("--batches: " + std::to_string(batches) + " is more than " +
                     std::to_string(kMaxBatches) + ", the most the bench takes (it keeps every "
                     "batch's wait time for wait_p50 and wait_p99); give at most --batches " +
                     std::to_string(kMaxBatches) + " (2000 already gives steady numbers)");
  }
  const std::string sized = has(plan.workloads, "synthetic") ? "synthetic"
                           : has(plan.workloads, "io")      ? "io"
                                                            : "";
  if (sized.empty()) return;
  const int64_t largest = *std::max_element(plan.batch_sizes.begin(), plan.batch_sizes.end());
  if (batches * largest <= kMaxSyntheticSamples) return;
  const int64_t fitting = kMaxSyntheticSamples / largest;
  throw UsageError(
      "--batches: " + std::to_string(batches) + " x --batch-size " + std::to_string(largest) +
      " = " + std::to_string(batches * largest) + " " + sized + " samples is more than " +
      std::to_string(kMaxSyntheticSamples) + " (the " + sized + " workload holds batches x "
      "batch-size samples, and a loader plans an epoch as a list of all their indices in "
      "memory); give " + (fitting >= 2 ? "at most --batches " + std::to_string(fitting) +
      " at --batch-size " + std::to_string(largest)
      : "a --batch-size of at most " + std::to_string(kMaxSyntheticSamples / batches)));
}

// --data-dir means the IDX folder for fmnist, the image folder for jpeg and the folder of tars
// for tar: one of them at a time.
void check_data_dir(const RawOptions& raw, Plan& plan) {
  const bool fmnist = has(plan.workloads, "fmnist"), jpeg = has(plan.workloads, "jpeg");
  const bool tar = has(plan.workloads, "tar");
  plan.data_dir_given = !raw.data_dir.empty();
  if (plan.data_dir_given && int{fmnist} + int{jpeg} + int{tar} > 1) {
    throw UsageError("--data-dir: ambiguous with more than one of --workload fmnist, jpeg and "
                     "tar (the Fashion-MNIST folder, the JPEG folder or the tar folder?); run "
                     "the workloads separately");
  }
  plan.base.data_dir = fmnist && plan.data_dir_given ? raw.data_dir : kDefaultFmnistDir;
  if (jpeg && plan.data_dir_given) plan.base.jpeg_dir = raw.data_dir;
  if (tar && plan.data_dir_given) plan.base.tar_dir = raw.data_dir;
  plan.jpeg_count = parse_count("--jpeg-count", raw.jpeg_count, 1, "2000");
  struct stat st {};
  if (tar && plan.data_dir_given &&
      (::stat(raw.data_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))) {
    throw UsageError("--data-dir: '" + raw.data_dir + "' is not a folder; give a folder of "
                     ".tar shards, or leave --data-dir out to use the generated set's shards");
  }
  if (jpeg && plan.data_dir_given &&
      (::stat(raw.data_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))) {
    throw UsageError("--data-dir: '" + raw.data_dir + "' is not a folder; give a folder of "
                     "class folders of images, or leave --data-dir out to use a generated set");
  }
  if (fmnist && (::stat(plan.base.data_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))) {
    throw UsageError("--data-dir: '" + plan.base.data_dir + "' is not a folder; pass the "
                     "folder with the Fashion-MNIST *-ubyte.gz files, or apt-get install "
                     "dataset-fashion-mnist for " + kDefaultFmnistDir);
  }
}

// The folder an output file goes into must exist, so a long sweep does not end in an error.
void check_output_file(const char* option, const std::string& path) {
  if (path.empty()) return;
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw UsageError(std::string(option) + ": folder '" + dir + "' of '" + path +
                     "' does not exist; create it or give another path");
  }
}

void check_shm_dir(const std::string& dir) {
  struct stat st {};
  if (!dir.empty() && (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))) {
    throw UsageError("--shm-dir: '" + dir + "' is not a folder; give a tmpfs folder such as "
                     "/dev/shm, or leave the option out to use memfd");
  }
}

// --inject-fault and its companions; the others need it, and it needs mploader workers.
void validate_fault(const RawOptions& raw, Plan& plan) {
  RunConfig& c = plan.base;
  if (raw.inject_fault.empty()) {
    const std::string given = !raw.fault_at_batch.empty() ? "--fault-at-batch"
                              : !raw.fault_worker.empty() ? "--fault-worker" : "";
    if (!given.empty()) {
      throw UsageError(given + ": only with --inject-fault, e.g. --inject-fault segv " + given +
                       " 1");
    }
    return;
  }
  const std::vector<std::string>& names = fault_names();
  if (std::find(names.begin(), names.end(), raw.inject_fault) == names.end()) {
    throw UsageError("--inject-fault: unknown fault '" + raw.inject_fault + "'; give one of " +
                     join(names) + ", e.g. --inject-fault segv");
  }
  c.fault = raw.inject_fault;
  if (plan.loaders != std::vector<std::string>{"mploader"}) {
    throw UsageError("--inject-fault: faults fire only in mploader's worker processes; run with "
                     "--loader mploader");
  }
  const int64_t fewest = *std::min_element(plan.workers.begin(), plan.workers.end());
  if (fewest < 1) {
    throw UsageError("--inject-fault: faults fire only in worker processes, and --workers has "
                     "0; give --workers 1 or more");
  }
  c.fault_at_batch = raw.fault_at_batch.empty()
                         ? 3 : parse_count("--fault-at-batch", raw.fault_at_batch, 0, "3");
  if (c.fault_at_batch >= c.batches) {
    throw UsageError("--fault-at-batch: " + std::to_string(c.fault_at_batch) + " is not before "
                     "--batches " + std::to_string(c.batches) + "; give a smaller batch number");
  }
  c.fault_worker =
      raw.fault_worker.empty() ? 0 : parse_count("--fault-worker", raw.fault_worker, 0, "0");
  if (c.fault_worker >= fewest) {
    throw UsageError("--fault-worker: there is no worker " + std::to_string(c.fault_worker) +
                     " with --workers " + std::to_string(fewest) + " (ids 0 to " +
                     std::to_string(fewest - 1) + ")");
  }
}

// --dataset-lib and --dataset name a dataset of the user's in place of --workload.
void validate_plugin(const RawOptions& raw, Plan& plan) {
  if (raw.dataset_lib.empty() && raw.dataset.empty()) {
    if (!raw.dataset_config.empty()) {
      throw UsageError("--dataset-config: only with --dataset-lib and --dataset, e.g. "
                       "--dataset-lib build/libmy_datasets.so --dataset my-images "
                       "--dataset-config /data/images");
    }
    return;
  }
  if (raw.dataset_lib.empty()) {
    throw UsageError("--dataset: needs --dataset-lib, the shared library that registers '" +
                     raw.dataset + "', e.g. --dataset-lib build/libmy_datasets.so");
  }
  plan.base.dataset_lib = raw.dataset_lib;
  plan.base.dataset_config = raw.dataset_config;
  // Parsing loads no library: main() does, and names the datasets when --dataset is missing.
  plan.workloads.clear();
  if (raw.dataset.empty()) return;
  if (raw.workload_given) {
    throw UsageError("--workload: not with --dataset, which names the dataset to measure; "
                     "leave --workload out");
  }
  if (has({"synthetic", "fmnist", "jpeg", "stream", "tar", "tokens"}, raw.dataset)) {
    throw UsageError("--dataset: '" + raw.dataset + "' is also a built-in workload's name, "
                     "which the bench would treat as that workload; register the dataset "
                     "under another name");
  }
  plan.workloads = {raw.dataset};
}

void validate(const RawOptions& raw, Plan& plan) {
  for (const std::string& own : own_workload_names()) {
    if (raw.workload.find(own) != std::string::npos) {
      throw UsageError("--workload: " + own + " runs on its own, with its own "
                       "options; see mploader-bench --workload " + own + " --help");
    }
  }
  plan.workloads =
      parse_name_list("--workload", raw.workload,
                      {"synthetic", "fmnist", "jpeg", "stream", "tar", "io"});
  plan.loaders = parse_name_list(
      "--loader", raw.loader,
      {"mploader", "mploader-get", "mploader-auto", "libtorch", "inprocess", "inprocess-copy",
       "limit", "pytorch"});
  const auto& loaders = plan.loaders;
  if (raw.autotune &&
      std::find(loaders.begin(), loaders.end(), "mploader-auto") == loaders.end()) {
    plan.loaders.push_back("mploader-auto");
  }
  plan.workers = parse_count_list("--workers", raw.workers, 0, "0,1,2,4");
  plan.base.sample_shape = parse_shape(raw.sample_shape);
  // Checked whatever the workload, so that a typo never waits for a sweep to reach stream.
  plan.base.context = parse_count("--context", raw.context, 1, "1024");
  plan.base.io_latency_us = parse_count("--io-latency-us", raw.io_latency_us, 0, "2000");
  plan.base.io_cpu_us = parse_count("--io-cpu-us", raw.io_cpu_us, 0, "300");
  plan.base.step_ms = parse_count("--step-ms", raw.step_ms, 0, "20");
  plan.batch_sizes = parse_count_list("--batch-size", raw.batch_size, 1, "64,256");
  plan.base.batch_size = plan.batch_sizes.front();
  plan.base.batches = parse_count("--batches", raw.batches, 2, "200");
  plan.repeat = parse_count("--repeat", raw.repeat, 1, "3");
  plan.prefetches = parse_count_list("--prefetch", raw.prefetch, 1, "2,4");
  validate_plugin(raw, plan);
  check_batches(plan);
  plan.base.prefetch = plan.prefetches.front();
  plan.csv = raw.csv;
  plan.plot = raw.plot;
  plan.base.shm_dir = raw.shm_dir;
  if (raw.start != "fork" && raw.start != "spawn" && raw.start != "forkserver") {
    throw UsageError("--start: unknown start method '" + raw.start +
                     "'; use fork, spawn or forkserver");
  }
  plan.base.start = raw.start;
  plan.base.checksum = raw.checksum;
  plan.json = raw.json;
  plan.base.crash_dir = raw.crash_dir;
  plan.base.max_restarts = parse_count("--max-restarts", raw.max_restarts, 0, "2");
  validate_fault(raw, plan);
  if (!raw.timeout_ms.empty()) {
    plan.base.timeout_ms = parse_count("--timeout-ms", raw.timeout_ms, 0, "2000");
  } else if (plan.base.fault == "hang") {
    plan.base.timeout_ms = 2000;
  }
  check_data_dir(raw, plan);
  check_output_file("--csv", plan.csv);
  check_output_file("--plot", plan.plot);
  check_shm_dir(plan.base.shm_dir);
}

}  // namespace

bool parse_command_line(int argc, char** argv, Plan& plan) {
  CLI::App app("mploader-bench: throughput of mploader against libtorch's and PyTorch's data "
               "loaders and an in-process ideal", "mploader-bench");
  RawOptions raw;
  add_options(app, raw);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return false;
  } catch (const CLI::ConfigError& e) {
    throw UsageError("in the --config file: " + std::string(e.what()) +
                     " (an unknown or misspelt key?); keys are the long option names without "
                     "'--', as mploader-bench --help lists them");
  } catch (const CLI::ParseError& e) {
    throw UsageError(std::string(e.what()) + "; see mploader-bench --help");
  }
  // [sweep] lists apply where the option itself was not given (file top level or command line).
  const std::pair<const char*, std::pair<std::string*, std::string*>> lists[] = {
      {"--workers", {&raw.workers, &raw.sweep_workers}},
      {"--prefetch", {&raw.prefetch, &raw.sweep_prefetch}},
      {"--batch-size", {&raw.batch_size, &raw.sweep_batch_size}}};
  for (const auto& [name, values] : lists) {
    if (!values.second->empty() && app.count(name) == 0) *values.first = *values.second;
  }
  raw.workload_given = app.count("--workload") > 0;
  validate(raw, plan);
  return true;
}

bool wants_workload(int argc, char** argv, const char* name) {
  const std::string joined = std::string("--workload=") + name;
  for (int i = 1; i < argc; ++i) {
    if (argv[i] == joined) return true;
    if (std::strcmp(argv[i], "--workload") == 0 && i + 1 < argc &&
        std::strcmp(argv[i + 1], name) == 0) {
      return true;
    }
  }
  return false;
}

bool parse_workload_command_line(CLI::App& app, int argc, char** argv,
                                 const std::string& help_command) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return false;
  } catch (const CLI::ParseError& e) {
    throw UsageError(std::string(e.what()) + "; see " + help_command);
  }
  return true;
}

}  // namespace bench
