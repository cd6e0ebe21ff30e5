// mploader-bench --workload hdf5: HDF5 files read by mploader's H5Dataset and by PyTorch's
// DataLoader over h5py, at one worker count, one shuffled epoch each:
//   images       uint8 images [N, 3, 32, 32] and int64 labels, contiguous;
//   images-gzip  the same, in chunks of 64 rows compressed with gzip;
//   text         variable-length UTF-8 strings (40 to 400 words) and labels.
// Loaders:
//   mploader          H5Dataset (rows read by hyperslab into the slot, one selection a batch);
//   pytorch           a map-style dataset that opens the file with h5py in each worker and
//                     reads one row per __getitem__ (h5py's documented fix for forks);
//   pytorch-batched   the same with __getitems__: the batch's rows sorted, one read a field.
//
//   mploader-bench --workload hdf5 --workers 2 --rows 20000 --rounds 3
//
// The files are written once by h5py (h5_peers.py, here) into the bench cache. Every run sums
// every value it read (numeric fields as int64, the text fields' UTF-8 bytes): all loaders of
// a layout must agree, or the run fails. Each round runs every loader of every layout, starting
// one loader later than the round before; the report gives medians and the ratio of mploader to
// each peer.
#pragma once

#include "bench/file_workload_cli.h"

#include <cstdint>
#include <string>

namespace bench {

struct H5BenchConfig : FileWorkloadConfig {
  int64_t chunk_cache_mb = 32;  // H5DatasetOptions::chunk_cache_bytes, in MiB
};

// Runs `config` and prints its report; 0, or 1 when a run failed or the loaders disagreed.
int run_h5_bench(const H5BenchConfig& config);

}  // namespace bench
