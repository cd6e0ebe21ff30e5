// The command line of mploader-bench --workload tar-mix (mix_bench.h), read as text and checked
// with the bench's own parsers, so that each error names the option and the fix.
#include "bench/cli.h"
#include "bench/mix/mix_bench.h"
#include "bench/run_config.h"
#include "bench/workload_registry.h"
#include "bench/workloads/fmnist_idx.h"

#include <CLI/CLI.hpp>

namespace bench {
namespace {

struct RawTarMix {
  std::string workload = "tar-mix";
  std::string data_dir = kDefaultFmnistDir;
  std::string jpeg_count = "4000";
  std::string workers = "2";
  std::string batch_size = "32";
  std::string rounds = "3";
  std::string shuffle_buffer = "256";
  std::string seed = "0";
  std::string timeout_ms = "120000";
  bool json = false;
};

void add_options(CLI::App& app, RawTarMix& r) {
  app.add_option("--workload", r.workload, "tar-mix (the other workloads have their own "
                 "options; see mploader-bench --help)")->capture_default_str();
  app.add_option("--data-dir", r.data_dir, "the Fashion-MNIST folder the jpeg set is made from")
      ->capture_default_str();
  app.add_option("--jpeg-count", r.jpeg_count, "images in the generated set packed into 8 "
                 "shards (4 / 2 / 2 per corpus)")->capture_default_str();
  app.add_option("--workers", r.workers, "worker count")->capture_default_str();
  app.add_option("--batch-size", r.batch_size, "samples per batch")->capture_default_str();
  app.add_option("--rounds", r.rounds, "rounds of the three ways; the report takes medians")
      ->capture_default_str();
  app.add_option("--shuffle-buffer", r.shuffle_buffer, "samples each worker's stream is "
                 "shuffled over (one and stream)")->capture_default_str();
  app.add_option("--seed", r.seed, "shuffling and mixing seed")->capture_default_str();
  app.add_option("--timeout-ms", r.timeout_ms, "mploader's longest wait for a batch")
      ->capture_default_str();
  app.add_flag("--json", r.json, "one JSON object per way per round, then the summary");
}

TarMixConfig validate(const RawTarMix& r) {
  if (r.workload != "tar-mix") {
    throw UsageError("--workload: tar-mix runs on its own; run the other workloads separately");
  }
  TarMixConfig c;
  c.data_dir = r.data_dir;
  c.jpeg_count = parse_count("--jpeg-count", r.jpeg_count, 8, "4000");
  c.workers = parse_count("--workers", r.workers, 1, "2");
  c.batch_size = parse_count("--batch-size", r.batch_size, 1, "32");
  c.rounds = parse_count("--rounds", r.rounds, 1, "3");
  c.shuffle_buffer = parse_count("--shuffle-buffer", r.shuffle_buffer, 0, "256");
  c.seed = static_cast<uint64_t>(parse_count("--seed", r.seed, 0, "0"));
  c.timeout_ms = parse_count("--timeout-ms", r.timeout_ms, 1, "120000");
  c.json = r.json;
  if (c.batch_size * 8 > c.jpeg_count) {
    throw UsageError("--batch-size: " + r.batch_size + " leaves the smallest corpus (a quarter "
                     "of --jpeg-count " + r.jpeg_count + ") under 2 batches; give a larger "
                     "--jpeg-count or a smaller --batch-size");
  }
  return c;
}

bool wants_tar_mix(int argc, char** argv) { return wants_workload(argc, argv, "tar-mix"); }

int tar_mix_main(int argc, char** argv) {
  CLI::App app("mploader-bench --workload tar-mix: three tar corpora mixed by stream and by "
               "index, against one corpus read in order", "mploader-bench");
  RawTarMix raw;
  add_options(app, raw);
  if (!parse_workload_command_line(app, argc, argv, "mploader-bench --workload tar-mix --help")) {
    return 0;
  }
  return run_tar_mix(validate(raw));
}

[[maybe_unused]] const bool kTarMixRegistered =
    register_workload({"tar-mix", wants_tar_mix, tar_mix_main});

}  // namespace

}  // namespace bench
