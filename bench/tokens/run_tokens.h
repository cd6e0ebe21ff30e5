// mploader-bench --workload tokens: variable-length token sequences from a real text corpus
// (token_corpus.h), padded per batch with mploader::pad_collate(), batched by one of four
// samplers, to measure how much of each batch is padding and how fast tokens arrive:
//
//   mploader-bench --workload tokens --sampler random,bucket --epochs 20
//   mploader-bench --workload tokens --sampler distributed-bucket --world-size 4 --rank 1
//       --max-tokens 4096 --dump-indices /tmp/rank1.txt   (one command)
//
// It has its own command line (tokens_cli.cc), registered for --workload tokens
// (bench/workload_registry.h).
// Single-threaded: one run at a time in the calling thread (the loader has its own workers).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace bench {

struct TokensConfig {
  std::string data;                   // corpus file or folder
  std::vector<std::string> samplers;  // random | bucket | distributed-bucket | distributed
  std::vector<int64_t> workers{2};
  int64_t world_size = 1;
  int64_t rank = 0;
  uint64_t seed = 0;
  uint64_t epoch = 0;     // the first epoch run (and the one --dump-indices writes)
  int64_t epochs = 1;     // epochs run, from `epoch` on
  int64_t max_tokens = 4096;  // bucket samplers: batch length x longest, padding included
  int64_t batch_size = 32;    // random and distributed: samples per batch
  int64_t prefetch = 2;
  double bucket_ratio = 1.1;
  bool drop = false;          // distributed-bucket: drop uneven batches instead of padding
  bool costliest_first = false;
  std::string dump_indices;   // empty: none
  bool json = false;
  int64_t timeout_ms = 120000;
};

// What one sampler x workers run measured, over all its epochs (this rank only).
struct TokensResult {
  std::string sampler;
  int64_t workers = 0;
  int64_t sequences = 0;         // in the corpus
  int64_t batches = 0;
  int64_t batches_per_epoch = 0;  // this rank's, the first epoch
  int64_t samples = 0;
  int64_t tokens = 0;            // real tokens delivered
  int64_t padded_tokens = 0;     // batch length x padded length, summed
  int64_t max_batch_tokens = 0;  // the largest padded batch
  int64_t padded_batches = 0;    // repeated to even out ranks (bucket samplers; per epoch sum)
  int64_t dropped_batches = 0;
  double loop_s = 0;             // first next() to the last batch in hand
  double pad_fraction() const {
    return padded_tokens > 0 ? 1.0 - static_cast<double>(tokens) / padded_tokens : 0.0;
  }
  double tokens_per_s() const { return loop_s > 0 ? tokens / loop_s : 0.0; }
};

// Parses the tokens command line into `config`; false when it printed the help.
bool parse_tokens_command_line(int argc, char** argv, TokensConfig& config);
// Runs every sampler x workers value, printing as it goes.
int run_tokens(const TokensConfig& config);

}  // namespace bench
