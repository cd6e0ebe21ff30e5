// The remote workload's output: a table (or JSON lines) of its rows, and the ratios it is
// read for: cold-cache mploader against each peer, and warm-cache mploader against the local
// folder.
#pragma once

#include "bench/remote/remote_bench.h"
#include "bench/run_config.h"

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace bench {

struct RemoteRow {
  RunResult run;          // run.config.loader: mploader, webdataset or mosaic
  std::string source;     // local, http or s3
  std::string cache;      // cold or warm; empty for the local folder
  int64_t downloaded_bytes = -1;  // the growth of the run's cache folder; -1: no cache
};

// JSON lines (config.json: json_line's fields, plus source, cache and downloaded_bytes), or
// the table and the ratios. `corpus_bytes`: the shards' size, for the table's title.
void print_remote(std::ostream& out, const RemoteBenchConfig& config,
                  const std::vector<RemoteRow>& rows, int64_t corpus_bytes);

}  // namespace bench
