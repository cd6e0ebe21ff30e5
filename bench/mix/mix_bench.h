// mploader-bench --workload tar-mix: three TarShards corpora mixed at 0.5 / 0.3 / 0.2, read at
// the same worker count three ways, so that the cost of mixing shows as a ratio:
//   one     the corpora's shards as one TarShards, each worker reading its shards in order
//           (no mixing: the rate to match);
//   stream  a StreamMixture of the three (stream_mixture.h): each worker reads every source's
//           shards in order and interleaves them by weighted draws;
//   index   a ConcatDataset of the three under a MixtureSampler: samples fetched by index.
//
//   mploader-bench --workload tar-mix --workers 2 --rounds 3
//
// The corpora are the tar workload's shards (tar_workload.h: the generated jpeg set packed into
// 8 tars, decoded and transformed as in that workload) split 4 / 2 / 2. Each round runs the
// three ways one after another, starting one way later than the round before; the report gives each way's median samples/s over the rounds,
// the ratios to `one`, and each source's share of the mixed epochs against its weight, in
// standard deviations of a binomial draw.
#pragma once

#include <cstdint>
#include <string>

namespace bench {

struct TarMixConfig {
  std::string data_dir;  // the Fashion-MNIST folder the jpeg set is generated from
  int64_t jpeg_count = 4000;
  int64_t workers = 2;
  int64_t batch_size = 32;
  int64_t rounds = 3;
  int64_t shuffle_buffer = 256;
  uint64_t seed = 0;
  int64_t timeout_ms = 120000;
  bool json = false;
};

// Runs `config` and prints its report; 0, or 1 when a run failed (said on stderr).
int run_tar_mix(const TarMixConfig& config);

}  // namespace bench
