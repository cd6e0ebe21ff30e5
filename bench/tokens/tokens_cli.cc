// The command line of mploader-bench --workload tokens (run_tokens.h): CLI11 reads every option
// as text and the checks here give one line naming the option and the fix, as bench/cli.cc does.
#include "bench/cli.h"
#include "bench/tokens/run_tokens.h"
#include "bench/tokens/token_corpus.h"
#include "bench/workload_registry.h"

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <cstring>
#include <iostream>

namespace bench {
namespace {

struct RawTokens {
  std::string workload = "tokens";
  std::string data = kDefaultTokenCorpus;
  std::string sampler = "bucket";
  std::string workers = "2";
  std::string world_size = "1";
  std::string rank = "0";
  std::string seed = "0";
  std::string epoch = "0";
  std::string epochs = "1";
  std::string max_tokens = "4096";
  std::string batch_size = "32";
  std::string prefetch = "2";
  std::string bucket_ratio = "1.1";
  std::string uneven = "pad";
  bool costliest_first = false;
  std::string dump_indices;
  bool json = false;
  std::string timeout_ms = "120000";
};

void add_tokens_options(CLI::App& app, RawTokens& r) {
  app.add_option("--workload", r.workload, "tokens (the other workloads have their own options; "
                 "see mploader-bench --help)")->capture_default_str();
  app.add_option("--data", r.data, "text file, or folder of them, cut into paragraphs")
      ->capture_default_str();
  app.add_option("--sampler", r.sampler, "random, bucket, distributed-bucket or distributed "
                 "(a comma list sweeps)")->capture_default_str();
  app.add_option("--workers", r.workers, "worker count; a comma list sweeps")
      ->capture_default_str();
  app.add_option("--world-size", r.world_size, "ranks the epoch is shared out to")
      ->capture_default_str();
  app.add_option("--rank", r.rank, "the rank this process plays")->capture_default_str();
  app.add_option("--seed", r.seed, "shuffling seed")->capture_default_str();
  app.add_option("--epoch", r.epoch, "first epoch (the one --dump-indices writes)")
      ->capture_default_str();
  app.add_option("--epochs", r.epochs, "epochs to run, for steadier tokens/s")
      ->capture_default_str();
  app.add_option("--max-tokens", r.max_tokens, "bucket samplers: most tokens per batch, "
                 "padding included")->capture_default_str();
  app.add_option("--batch-size", r.batch_size, "random and distributed: samples per batch")
      ->capture_default_str();
  app.add_option("--prefetch", r.prefetch, "batches in flight per worker")->capture_default_str();
  app.add_option("--bucket-ratio", r.bucket_ratio, "bucket samplers: ratio between bucket "
                 "bounds (>= 1)")->capture_default_str();
  app.add_option("--uneven", r.uneven, "distributed-bucket: pad or drop batches that do not "
                 "divide by the world size")->capture_default_str();
  app.add_flag("--costliest-first", r.costliest_first, "bucket samplers: the costliest batch "
               "in the first step");
  app.add_option("--dump-indices", r.dump_indices, "write the first epoch's batches of this "
                 "rank to FILE, one line per batch, indices separated by spaces");
  app.add_flag("--json", r.json, "one JSON object per run per line on stdout");
  app.add_option("--timeout-ms", r.timeout_ms, "mploader's longest wait for a batch")
      ->capture_default_str();
}

double parse_ratio(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v >= 1.0 && v <= 1e6)) {
    throw UsageError("--bucket-ratio: '" + text + "' is not a number from 1 to 1e6; e.g. "
                     "--bucket-ratio 1.1 (1 gives every length its own bucket)");
  }
  return v;
}

void check_ranks(TokensConfig& c, const RawTokens& r) {
  c.world_size = parse_count("--world-size", r.world_size, 1, "4");
  c.rank = parse_count("--rank", r.rank, 0, "0");
  if (c.rank >= c.world_size) {
    throw UsageError("--rank: " + r.rank + " is not below --world-size " + r.world_size +
                     "; ranks run from 0 to " + std::to_string(c.world_size - 1));
  }
  for (const std::string& s : c.samplers) {
    if (c.world_size > 1 && (s == "random" || s == "bucket")) {
      throw UsageError("--sampler: " + s + " has no ranks, and --world-size is " +
                       r.world_size + "; use distributed" + (s == "bucket" ? "-bucket" : "") +
                       ", or --world-size 1");
    }
  }
}

void validate(const RawTokens& r, TokensConfig& c) {
  if (r.workload != "tokens") {
    throw UsageError("--workload: tokens runs on its own; run the other workloads separately");
  }
  c.data = r.data;
  c.samplers = parse_name_list("--sampler", r.sampler,
                               {"random", "bucket", "distributed-bucket", "distributed"});
  c.workers = parse_count_list("--workers", r.workers, 0, "0,2");
  check_ranks(c, r);
  c.seed = static_cast<uint64_t>(parse_count("--seed", r.seed, 0, "1"));
  c.epoch = static_cast<uint64_t>(parse_count("--epoch", r.epoch, 0, "0"));
  c.epochs = parse_count("--epochs", r.epochs, 1, "20");
  c.max_tokens = parse_count("--max-tokens", r.max_tokens, 1, "4096");
  c.batch_size = parse_count("--batch-size", r.batch_size, 1, "32");
  c.prefetch = parse_count("--prefetch", r.prefetch, 1, "2");
  c.bucket_ratio = parse_ratio(r.bucket_ratio);
  if (r.uneven != "pad" && r.uneven != "drop") {
    throw UsageError("--uneven: unknown value '" + r.uneven + "'; use pad or drop");
  }
  c.drop = r.uneven == "drop";
  c.costliest_first = r.costliest_first;
  c.dump_indices = r.dump_indices;
  if (!c.dump_indices.empty() && (c.samplers.size() > 1 || c.workers.size() > 1)) {
    throw UsageError("--dump-indices: give one --sampler and one --workers value, so that the "
                     "file holds one run's batches");
  }
  c.json = r.json;
  c.timeout_ms = parse_count("--timeout-ms", r.timeout_ms, 0, "120000");
}

}  // namespace

bool parse_tokens_command_line(int argc, char** argv, TokensConfig& config) {
  CLI::App app("mploader-bench --workload tokens: padding and token throughput of variable-"
               "length sequences under mploader's samplers", "mploader-bench");
  RawTokens raw;
  add_tokens_options(app, raw);
  if (!parse_workload_command_line(app, argc, argv, "mploader-bench --workload tokens --help")) {
    return false;
  }
  validate(raw, config);
  return true;
}

namespace {

bool wants_tokens(int argc, char** argv) { return wants_workload(argc, argv, "tokens"); }

int tokens_main(int argc, char** argv) {
  TokensConfig config;
  if (!parse_tokens_command_line(argc, argv, config)) return 0;
  return run_tokens(config);
}

[[maybe_unused]] const bool kTokensRegistered =
    register_workload({"tokens", wants_tokens, tokens_main});

}  // namespace

}  // namespace bench
