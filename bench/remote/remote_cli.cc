// The command line of mploader-bench --workload remote (remote_bench.h), read as text and
// checked with the bench's own parsers, so that each error names the option and the fix.
#include "bench/cli.h"
#include "bench/remote/remote_bench.h"
#include "bench/run_config.h"
#include "bench/workload_registry.h"
#include "bench/workloads/fmnist_idx.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace bench {
namespace {

struct RawRemote {
  std::string workload = "remote";
  std::string workers = "1,2";
  std::string batch_size = "32";
  std::string batches = "120";
  std::string prefetch = "2";
  std::string jpeg_count = "2000";
  std::string data_dir = kDefaultFmnistDir;
  std::string loader = "mploader,webdataset,mosaic";
  bool json = false;
  std::string timeout_ms = "120000";
  std::string http_rate = "0";
};

void add_options(CLI::App& app, RawRemote& r) {
  app.add_option("--workload", r.workload, "remote (the other workloads have their own "
                 "options; see mploader-bench --help)")->capture_default_str();
  app.add_option("--workers", r.workers, "worker counts (a comma list)")->capture_default_str();
  app.add_option("--batch-size", r.batch_size, "samples per batch")->capture_default_str();
  app.add_option("--batches", r.batches, "batches per run; at least one epoch, so that the "
                 "cold run fills the cache the warm run reads")->capture_default_str();
  app.add_option("--prefetch", r.prefetch, "batches in flight per worker")->capture_default_str();
  app.add_option("--jpeg-count", r.jpeg_count, "images in the generated set packed into 8 "
                 "shards")->capture_default_str();
  app.add_option("--data-dir", r.data_dir, "the Fashion-MNIST folder the images are made from")
      ->capture_default_str();
  app.add_option("--loader", r.loader, "mploader, and the peers webdataset and mosaic (a comma "
                 "list)")->capture_default_str();
  app.add_option("--http-rate", r.http_rate, "nginx's bandwidth per connection, as its "
                 "limit_rate takes it (\"20m\": 20 MB/s); 0: loopback's")->capture_default_str();
  app.add_flag("--json", r.json, "one JSON object per row on stdout");
  app.add_option("--timeout-ms", r.timeout_ms, "mploader's LoaderOptions::timeout")
      ->capture_default_str();
}

// Digits, then k or m or nothing: what nginx's limit_rate takes.
bool nginx_rate(const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  return digits > 0 && (digits == text.size() ||
                        (digits + 1 == text.size() && (text.back() == 'k' || text.back() == 'm')));
}

void validate(const RawRemote& r, RemoteBenchConfig& c) {
  if (r.workload != "remote") {
    throw UsageError("--workload: remote runs on its own; run the other workloads separately");
  }
  c.workers = parse_count_list("--workers", r.workers, 0, "1,2");
  c.batch_size = parse_count("--batch-size", r.batch_size, 1, "32");
  c.batches = parse_count("--batches", r.batches, 2, "120");
  c.prefetch = parse_count("--prefetch", r.prefetch, 1, "2");
  c.jpeg_count = parse_count("--jpeg-count", r.jpeg_count, 8, "2000");
  c.fmnist_dir = r.data_dir;
  const std::vector<std::string> loaders =
      parse_name_list("--loader", r.loader, {"mploader", "webdataset", "mosaic"});
  if (std::find(loaders.begin(), loaders.end(), "mploader") == loaders.end()) {
    throw UsageError("--loader: the peers are measured beside mploader; give mploader too, as "
                     "in --loader mploader," + loaders[0]);
  }
  c.peers.clear();
  for (const std::string& l : loaders) {
    if (l != "mploader") c.peers.push_back(l);
  }
  if (!nginx_rate(r.http_rate)) {
    throw UsageError("--http-rate: '" + r.http_rate + "' is not a rate nginx takes; give bytes "
                     "per second with k or m, as in 20m, or 0 for no limit");
  }
  c.http_rate = r.http_rate;
  c.json = r.json;
  c.timeout_ms = parse_count("--timeout-ms", r.timeout_ms, 0, "120000");
}

bool wants_remote(int argc, char** argv) { return wants_workload(argc, argv, "remote"); }

int remote_main(int argc, char** argv) {
  CLI::App app("mploader-bench --workload remote: tar shards read from nginx and an S3 "
               "server on 127.0.0.1, cold and warm cache, beside webdataset and MosaicML "
               "Streaming", "mploader-bench");
  RawRemote raw;
  add_options(app, raw);
  if (!parse_workload_command_line(app, argc, argv, "mploader-bench --workload remote --help")) {
    return 0;
  }
  RemoteBenchConfig config;
  validate(raw, config);
  return run_remote(config);
}

[[maybe_unused]] const bool kRemoteRegistered =
    register_workload({"remote", wants_remote, remote_main});

}  // namespace

}  // namespace bench
