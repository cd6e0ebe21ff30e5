// Runs of mploader-bench --workload tokens (run_tokens.h): one Loader per sampler x workers
// value over the corpus, counting real and padded tokens of every batch it delivers.
#include "bench/tokens/run_tokens.h"

#include "bench/run_config.h"
#include "bench/tokens/token_corpus.h"

#include <mploader/bucket_sampler.h>
#include <mploader/distributed_sampler.h>
#include <mploader/errors.h>
#include <mploader/loader.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>

namespace bench {
namespace {

struct SamplerSetup {
  std::shared_ptr<mploader::BatchSampler> batches;
  std::shared_ptr<mploader::BucketBatchSampler> bucket;  // null for random and distributed
  uint64_t slot_bytes = 0;
};

std::shared_ptr<mploader::BucketBatchSampler> make_bucket(const TokensConfig& c,
                                                          const std::string& name,
                                                          const std::vector<int64_t>& lengths) {
  mploader::BucketOptions bo;
  bo.max_tokens = c.max_tokens;
  bo.seed = c.seed;
  bo.bucket_ratio = c.bucket_ratio;
  bo.uneven = c.drop ? mploader::BucketOptions::Uneven::kDrop : mploader::BucketOptions::Uneven::kPad;
  bo.costliest_first = c.costliest_first;
  try {
    if (name == "bucket") return std::make_shared<mploader::BucketBatchSampler>(lengths, bo);
    return std::make_shared<mploader::DistributedBucketSampler>(lengths, bo, c.world_size, c.rank);
  } catch (const mploader::OptionError& e) {
    throw UsageError("--max-tokens: " + std::string(e.what()));
  }
}

// Slots sized for the largest batch a sampler can give (the loader's own estimate looks at one
// sample only), so that no batch needs a one-off segment.
SamplerSetup make_sampler(const TokensConfig& c, const std::string& name,
                          const std::vector<int64_t>& lengths) {
  SamplerSetup s;
  if (name == "random" || name == "distributed") {
    std::shared_ptr<mploader::Sampler> order;
    if (name == "random") {
      order = std::make_shared<mploader::RandomSampler>(c.seed);
    } else {
      order = std::make_shared<mploader::DistributedSampler>(c.world_size, c.rank, true, c.seed);
    }
    s.batches = std::make_shared<mploader::FixedSizeBatchSampler>(
        order, static_cast<size_t>(c.batch_size), false);
    const int64_t longest = *std::max_element(lengths.begin(), lengths.end());
    s.slot_bytes = static_cast<uint64_t>(c.batch_size * (longest + 1) * 8 + 4096);
    return s;
  }
  s.bucket = make_bucket(c, name, lengths);
  s.batches = s.bucket;
  s.slot_bytes = static_cast<uint64_t>((c.max_tokens + static_cast<int64_t>(s.bucket->max_batch_size())) * 8 + 4096);
  return s;
}

void write_batch(std::ofstream& out, const std::vector<int64_t>& indices) {
  for (size_t i = 0; i < indices.size(); ++i) out << (i ? " " : "") << indices[i];
  out << '\n';
}

TokensResult run_one(const TokensConfig& c, const std::string& name, int64_t workers,
                     const std::shared_ptr<TokensDataset>& data) {
  const SamplerSetup s = make_sampler(c, name, data->lengths());
  mploader::LoaderOptions o;
  o.batch_sampler = s.batches;
  o.collate = mploader::pad_collate();
  o.num_workers = workers;
  o.prefetch_factor = c.prefetch;
  o.timeout = std::chrono::milliseconds(c.timeout_ms);
  o.max_batch_bytes = s.slot_bytes;
  o.seed = c.seed;
  o.rank = c.rank;
  o.world_size = c.world_size;
  mploader::Loader loader(data, o);
  std::ofstream dump;
  if (!c.dump_indices.empty()) {
    dump.open(c.dump_indices);
    if (!dump) throw UsageError("--dump-indices: cannot write '" + c.dump_indices + "'");
  }
  TokensResult r;
  r.sampler = name;
  r.workers = workers;
  r.sequences = static_cast<int64_t>(data->size());
  const auto start = std::chrono::steady_clock::now();
  for (uint64_t e = c.epoch; e < c.epoch + static_cast<uint64_t>(c.epochs); ++e) {
    loader.set_epoch(e);
    int64_t in_epoch = 0;
    for (mploader::Batch& b : loader) {
      const at::Tensor& tokens = b["tokens"];
      r.tokens += b["tokens_lengths"].sum().item<int64_t>();
      r.padded_tokens += tokens.numel();
      r.max_batch_tokens = std::max<int64_t>(r.max_batch_tokens, tokens.numel());
      r.samples += tokens.size(0);
      ++in_epoch;
      if (dump.is_open() && e == c.epoch) write_batch(dump, b.indices());
    }
    r.batches += in_epoch;
    if (e == c.epoch) r.batches_per_epoch = in_epoch;
    if (s.bucket) {
      const mploader::BucketEpochStats st = s.bucket->stats(e);
      r.padded_batches += static_cast<int64_t>(st.padded_batches);
      r.dropped_batches += static_cast<int64_t>(st.dropped_batches);
    }
  }
  r.loop_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (dump.is_open() && !dump.flush()) {
    throw std::runtime_error("--dump-indices: writing '" + c.dump_indices + "' failed");
  }
  return r;
}

std::string json_line(const TokensConfig& c, const TokensResult& r) {
  nlohmann::json j = {{"workload", "tokens"}, {"sampler", r.sampler}, {"workers", r.workers},
                      {"world_size", c.world_size}, {"rank", c.rank}, {"seed", c.seed},
                      {"epoch", c.epoch}, {"epochs", c.epochs}, {"sequences", r.sequences},
                      {"batches_per_epoch", r.batches_per_epoch}, {"batches", r.batches},
                      {"samples", r.samples}, {"tokens", r.tokens},
                      {"padded_tokens", r.padded_tokens}, {"pad_fraction", r.pad_fraction()},
                      {"max_batch_tokens", r.max_batch_tokens},
                      {"tokens_per_s", r.tokens_per_s()}, {"loop_s", r.loop_s},
                      {"padded_batches", r.padded_batches},
                      {"dropped_batches", r.dropped_batches}};
  if (r.sampler == "random" || r.sampler == "distributed") {
    j["batch_size"] = c.batch_size;
  } else {
    j["max_tokens"] = c.max_tokens;
  }
  return j.dump();
}

void print_table(std::ostream& out, const TokensConfig& c, const std::vector<TokensResult>& rs) {
  char line[256];
  std::snprintf(line, sizeof line, "%-19s %7s %9s %11s %9s %8s %10s %12s %6s %7s\n", "sampler",
                "workers", "rank", "batches/ep", "pad %", "max tok", "tokens", "tokens/s",
                "padded", "dropped");
  out << line;
  for (const TokensResult& r : rs) {
    const std::string rank = std::to_string(c.rank) + "/" + std::to_string(c.world_size);
    std::snprintf(line, sizeof line, "%-19s %7lld %9s %11lld %8.2f%% %8lld %10lld %12.0f %6lld %7lld\n",
                  r.sampler.c_str(), static_cast<long long>(r.workers), rank.c_str(),
                  static_cast<long long>(r.batches_per_epoch), 100 * r.pad_fraction(),
                  static_cast<long long>(r.max_batch_tokens), static_cast<long long>(r.tokens),
                  r.tokens_per_s(), static_cast<long long>(r.padded_batches),
                  static_cast<long long>(r.dropped_batches));
    out << line;
  }
}

void describe(const std::string& path, const TokenCorpus& corpus) {
  std::vector<int64_t> lengths;
  int64_t total = 0;
  for (const auto& s : corpus.sequences) {
    lengths.push_back(static_cast<int64_t>(s.size()));
    total += lengths.back();
  }
  std::sort(lengths.begin(), lengths.end());
  std::cerr << "mploader-bench: tokens corpus " << path << ": " << corpus.files.size()
            << " files, " << lengths.size() << " paragraphs, " << total << " tokens, vocabulary "
            << corpus.vocabulary << ", lengths " << lengths.front() << " to " << lengths.back()
            << " (median " << lengths[lengths.size() / 2] << ")\n";
}

}  // namespace

int run_tokens(const TokensConfig& config) {
  at::set_num_threads(1);  // as the other workloads: the loader's workers are what is measured
  auto corpus = std::make_shared<const TokenCorpus>(read_token_corpus(config.data));
  describe(config.data, *corpus);
  auto data = std::make_shared<TokensDataset>(corpus);
  std::vector<TokensResult> results;
  bool ok = true;
  for (const std::string& sampler : config.samplers) {
    for (int64_t workers : config.workers) {
      std::cerr << "mploader-bench: tokens sampler=" << sampler << " workers=" << workers
                << " rank=" << config.rank << "/" << config.world_size << '\n';
      try {
        results.push_back(run_one(config, sampler, workers, data));
        if (config.json) std::cout << json_line(config, results.back()) << std::endl;
      } catch (const UsageError&) {
        throw;
      } catch (const std::exception& e) {
        std::cerr << "mploader-bench: tokens sampler=" << sampler << " workers=" << workers
                  << " failed: " << e.what() << '\n';
        ok = false;
      }
    }
  }
  if (!config.json && !results.empty()) print_table(std::cout, config, results);
  return ok ? 0 : 1;
}

}  // namespace bench
