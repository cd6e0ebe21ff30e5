// mploader-bench --workload remote: the tar workload's shards read from object storage. The
// bench starts nginx (HTTP) and moto_server (S3) on 127.0.0.1, uploads the shards, and
// measures, at each worker count, with a cold cache (an empty folder) and then a warm one
// (the folder the cold run filled):
//   - mploader's TarShards over the http:// URLs and over the s3:// prefix, through its shard
//     cache, and over the local folder; and over the http:// URLs with read-ahead off
//     (RemoteOptions::prefetch_bytes = 0), cold, to show what fetching the next shards buys;
//   - the webdataset package over the same http:// URLs, with its cache_dir;
//   - MosaicML Streaming over the same samples, written with its MDSWriter, from the same S3
//     endpoint, with its local folder.
// Each row gives samples/s, the first batch's latency and the bytes the run downloaded (the
// growth of its cache folder).
//
// It has its own command line (remote_cli.cc), registered for --workload remote
// (bench/workload_registry.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace bench {

struct RemoteBenchConfig {
  std::vector<int64_t> workers{1, 2};
  int64_t batch_size = 32;
  int64_t batches = 120;
  int64_t prefetch = 2;
  int64_t jpeg_count = 2000;  // images of the generated set packed into the shards
  std::string fmnist_dir;     // where the generated set's images come from
  std::vector<std::string> peers{"webdataset", "mosaic"};  // run beside mploader
  // nginx's limit_rate per connection ("20m"): a network slower than loopback. "0": none.
  std::string http_rate = "0";
  bool json = false;
  int64_t timeout_ms = 120000;
};

// Runs every source x cache x loader x workers row, then prints the table and the ratios.
int run_remote(const RemoteBenchConfig& config);

}  // namespace bench
