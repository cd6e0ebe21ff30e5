"""mploader-bench --workload parquet: the Parquet files, and PyTorch loaders reading them.

  parquet_peers.py write <folder> <rows>      writes numeric-00N.parquet and text-00N.parquet
  parquet_peers.py run <loader> <folder> <layout> <workers> <batch> <seed>

`write` splits the rows over 4 files of each layout, 1000 rows a row group: numeric holds
`features` (fixed_size_list<float32>[256], quarters of small integers, so exact) and `label`;
text holds `text` (40 to 400 words) and `label`. `run` reads one shuffled epoch of a layout's
files and prints one JSON line: samples, seconds (from iter() to the last batch) and a checksum
that does not depend on the order of the rows (features * 4 summed as int64, plus the labels,
plus the UTF-8 bytes of the texts). The loaders:

  pyarrow  a DataLoader over an IterableDataset: the (file, row group) pairs shuffled with the
           seed and dealt round-robin to the workers, each row group read with pyarrow and
           converted once, its rows passed through a 1024-row shuffle buffer
  hf       Hugging Face datasets' load_dataset("parquet") (its Arrow cache in
           <folder>/hf-cache, offline), with_format("torch") and a shuffling DataLoader; the
           line adds load_seconds, the time load_dataset took, which seconds leaves out
"""
import glob
import json
import os
import random
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

FILES = 4
ROW_GROUP = 1000
COLUMNS = {"numeric": ["features", "label"], "text": ["text", "label"]}


def write(folder, rows):
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(0)
    features = (rng.integers(-512, 512, (rows, 256), dtype=np.int32) / 4).astype(np.float32)
    labels = rng.integers(0, 1000, rows, dtype=np.int64)
    words = "the of and to in a is that for it as was with be by on not he this are".split()
    texts = [" ".join(rng.choice(words, int(rng.integers(40, 401)))) for _ in range(rows)]
    names = []
    for i, part in enumerate(np.array_split(np.arange(rows), FILES)):
        lo, hi = (int(part[0]), int(part[-1]) + 1) if len(part) else (0, 0)
        numeric = pa.table({
            "features": pa.FixedSizeListArray.from_arrays(pa.array(features[lo:hi].ravel()),
                                                          256),
            "label": pa.array(labels[lo:hi]),
        })
        text = pa.table({"text": pa.array(texts[lo:hi], pa.string()),
                         "label": pa.array(labels[lo:hi])})
        for layout, table in (("numeric", numeric), ("text", text)):
            name = f"{layout}-{i:03d}.parquet"
            pq.write_table(table, os.path.join(folder, name + ".tmp"), row_group_size=ROW_GROUP)
            names.append(name)
    for name in names:
        os.replace(os.path.join(folder, name + ".tmp"), os.path.join(folder, name))


def layout_files(folder, layout):
    files = sorted(glob.glob(os.path.join(folder, f"{layout}-[0-9][0-9][0-9].parquet")))
    if not files:
        sys.exit(f"parquet_peers.py: no {layout}-NNN.parquet in {folder}; run `write` first")
    return files


def make_row_groups():
    import torch
    from torch.utils.data import IterableDataset, get_worker_info

    class RowGroups(IterableDataset):
        """Rows of the files' row groups, a worker reading every num_workers-th of them."""

        def __init__(self, files, columns, seed, buffer=1024):
            self.columns, self.seed, self.buffer = columns, seed, buffer
            self.pairs = [(f, g) for f in files for g in range(pq.ParquetFile(f).num_row_groups)]
            random.Random(seed).shuffle(self.pairs)  # the same order in every worker
            self.readers = {}  # file -> ParquetFile, opened in the process that reads

        def _rows(self, file, group):
            if file not in self.readers:
                self.readers[file] = pq.ParquetFile(file)
            table = self.readers[file].read_row_group(group, columns=self.columns)
            n = table.num_rows
            columns = []
            for name in self.columns:  # each column converted once for the row group
                column = table.column(name).combine_chunks()
                if name == "features":
                    # A writable copy: torch.from_numpy warns on Arrow's read-only buffers.
                    flat = column.flatten().to_numpy(zero_copy_only=False, writable=True)
                    columns.append(torch.from_numpy(flat.reshape(n, -1)))
                else:
                    columns.append(column.to_pylist())  # label -> int, text -> str
            for i in range(n):
                yield {name: values[i] for name, values in zip(self.columns, columns)}

        def __iter__(self):
            info = get_worker_info()
            worker, workers = (info.id, info.num_workers) if info else (0, 1)
            rng = random.Random(self.seed * 1009 + worker)
            buffer = []
            for file, group in self.pairs[worker::workers]:
                for row in self._rows(file, group):
                    if len(buffer) < self.buffer:
                        buffer.append(row)
                        continue
                    j = rng.randrange(self.buffer)  # a random row out, the new one in its place
                    yield buffer[j]
                    buffer[j] = row
            rng.shuffle(buffer)
            yield from buffer

    return RowGroups


def checksum(batch):
    import torch
    total = 0
    for name, values in batch.items():
        if name == "features":
            total += int((values * 4).round().to(torch.int64).sum())
        elif name == "label":
            total += int(torch.as_tensor(values).to(torch.int64).sum())
        else:
            total += sum(len(s.encode("utf-8")) for s in values)
    return total


def epoch(loader):
    """Samples, seconds and checksum of one pass over `loader`."""
    start = time.perf_counter()
    samples = total = 0
    for b in loader:
        samples += len(b["label"])
        total += checksum(b)
    return samples, time.perf_counter() - start, total


def run_pyarrow(folder, layout, workers, batch, seed):
    from torch.utils.data import DataLoader
    # pyarrow imports pandas on the first to_numpy() (half a second): done here, before the
    # clock starts and the workers fork, as a training script would have it done already.
    pa.array([0.0]).to_numpy()
    data = make_row_groups()(layout_files(folder, layout), COLUMNS[layout], seed)
    samples, seconds, total = epoch(DataLoader(data, batch_size=batch, num_workers=workers))
    return {"samples": samples, "seconds": seconds, "checksum": total}


def run_hf(folder, layout, workers, batch, seed):
    os.environ["HF_HUB_OFFLINE"] = "1"  # before datasets is imported: it reads them then
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    import datasets
    import torch
    datasets.disable_progress_bars()  # the line on stdout is the output
    from torch.utils.data import DataLoader
    start = time.perf_counter()
    ds = datasets.load_dataset("parquet", data_files=layout_files(folder, layout),
                               split="train", cache_dir=os.path.join(folder, "hf-cache"))
    load_seconds = time.perf_counter() - start
    ds = ds.with_format("torch")
    loader = DataLoader(ds, batch_size=batch, shuffle=True, num_workers=workers,
                        generator=torch.Generator().manual_seed(seed))
    samples, seconds, total = epoch(loader)
    return {"samples": samples, "seconds": seconds, "checksum": total,
            "load_seconds": load_seconds}


def run(loader, folder, layout, workers, batch, seed):
    if layout not in COLUMNS:
        sys.exit(f"parquet_peers.py: layout {layout!r} is not one of {', '.join(COLUMNS)}")
    runners = {"pyarrow": run_pyarrow, "hf": run_hf}
    if loader not in runners:
        sys.exit(f"parquet_peers.py: loader {loader!r} is not one of {', '.join(runners)}")
    print(json.dumps(runners[loader](folder, layout, workers, batch, seed)))


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2], int(sys.argv[3]))
    else:
        run(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]),
            int(sys.argv[7]))
