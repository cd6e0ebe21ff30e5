// mploader-bench --workload parquet: Parquet files read by mploader's ParquetShards and by two
// PyTorch loaders, at one worker count, one shuffled epoch each:
//   numeric  `features`, fixed_size_list<float32>[256], and `label` int64;
//   text     `text`, strings of 40 to 400 words, and `label`.
// Each layout is 4 files of 1000-row row groups. Loaders:
//   mploader  ParquetShards (a row group decoded once per worker, rows copied into the slot;
//             text through get()), a shuffle buffer of 1024 rows;
//   pyarrow   a DataLoader over an IterableDataset that reads the row groups with
//             pyarrow.parquet, dealt round-robin to the workers, a shuffle buffer of 1024 rows;
//   hf        Hugging Face datasets: load_dataset("parquet") on the files (offline, its cache in
//             the data folder; not timed), with_format("torch"), a shuffling DataLoader.
//
//   mploader-bench --workload parquet --workers 2 --rows 20000 --rounds 3
//
// The files are written once by pyarrow (parquet_peers.py, here) into the bench cache. Every
// run sums every value it read (features times 4 as int64, labels, the texts' UTF-8 bytes): all
// loaders of a layout must agree, or the run fails. Each round runs every loader of every
// layout, starting one loader later than the round before; the report gives medians and the
// ratio of mploader to each peer.
#pragma once

#include "bench/file_workload_cli.h"

namespace bench {

using PqBenchConfig = FileWorkloadConfig;

// Runs `config` and prints its report; 0, or 1 when a run failed or the loaders disagreed.
int run_pq_bench(const PqBenchConfig& config);

}  // namespace bench
