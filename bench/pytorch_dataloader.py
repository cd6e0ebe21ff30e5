#!/usr/bin/python3
"""PyTorch's own torch.utils.data.DataLoader on mploader-bench's workloads, measured the same way.

Run with Debian's /usr/bin/python3 (python3-torch). mploader-bench --loader pytorch calls it;
it can also run alone:

    /usr/bin/python3 bench/pytorch_dataloader.py --workload synthetic --workers 0,2

Prints one JSON object per configuration per line on stdout (the same fields as
mploader-bench --json, loader "pytorch"); progress goes to stderr. Same semantics as the C++
runners: sequential order, drop_last, fork start method, persistent workers (mploader keeps
its workers across epochs too), one intra-op thread, more epochs when one is not enough.
"""
import argparse
import gc
import gzip
import json
import os
import sys
import time
import zlib

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

DEFAULT_DATA_DIR = "/usr/share/datasets/fashion-mnist"


def fail(message):
    print("pytorch_dataloader.py: " + message, file=sys.stderr)
    sys.exit(2)


class SyntheticDataset(Dataset):
    """image: uint8 of `shape` filled with index % 256; label: int64 scalar index % 10."""

    def __init__(self, shape, size):
        self.shape, self.size = tuple(shape), size

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        return {"image": torch.full(self.shape, index % 256, dtype=torch.uint8),
                "label": torch.tensor(index % 10, dtype=torch.int64)}


def read_idx(path, magic, dims):
    """Reads a gzipped IDX file; returns a uint8 array of the header's shape."""
    try:
        with gzip.open(path, "rb") as f:
            data = f.read()
    except (OSError, EOFError, zlib.error) as e:
        fail(f"{path}: cannot read ({e}); fix: apt-get install dataset-fashion-mnist, "
             f"or pass --data-dir with intact *-ubyte.gz files")
    header = 4 + 4 * dims
    if len(data) < header or int.from_bytes(data[:4], "big") != magic:
        fail(f"{path}: not an IDX file with magic {magic:#010x}")
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    expected = header + int(np.prod(shape))
    if len(data) != expected:
        fail(f"{path}: expected {expected} bytes for shape {shape}, found {len(data)}")
    return np.frombuffer(data, dtype=np.uint8, offset=header).reshape(shape)


class FmnistDataset(Dataset):
    """Train split in memory; image float32 [1, 28, 28] in [0, 1]; label int64 scalar."""

    def __init__(self, data_dir):
        images = read_idx(os.path.join(data_dir, "train-images-idx3-ubyte.gz"), 0x803, 3)
        labels = read_idx(os.path.join(data_dir, "train-labels-idx1-ubyte.gz"), 0x801, 1)
        if images.shape[1:] != (28, 28) or labels.shape[0] != images.shape[0]:
            fail(f"{data_dir}: images {images.shape} and labels {labels.shape} do not match")
        # Converted once, as in the C++ FmnistDataset: get only indexes.
        self.images = torch.from_numpy(images.copy()).unsqueeze(1).to(torch.float32).div_(255)
        self.labels = torch.from_numpy(labels.astype(np.int64))

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        return {"image": self.images[index],
                "label": self.labels[index]}


def make_loader(dataset, workers, batch_size, prefetch):
    kwargs = dict(batch_size=batch_size, shuffle=False, drop_last=True, num_workers=workers)
    if workers > 0:
        kwargs.update(multiprocessing_context="fork", prefetch_factor=prefetch,
                      persistent_workers=True)
    return DataLoader(dataset, **kwargs)


def batch_bytes(batch):
    return sum(t.numel() * t.element_size() for t in batch.values())


def measure(dataset, workers, batch_size, batches, prefetch):
    """Times one configuration exactly as mploader-bench's RunTimer does."""
    start = time.perf_counter()
    loader = make_loader(dataset, workers, batch_size, prefetch)
    taken = samples = steady_samples = steady_bytes = 0
    first = last = None
    while taken < batches:
        before = taken
        for batch in loader:
            now = time.perf_counter()
            n = batch["image"].size(0)
            if taken == 0:
                first = now
            else:
                steady_samples += n
                steady_bytes += batch_bytes(batch)
            last, taken, samples = now, taken + 1, samples + n
            del batch
            if taken == batches:
                break
        if taken == before:
            fail("an epoch gave no batch (dataset smaller than a batch?)")
    loop_end = time.perf_counter()
    del loader
    gc.collect()
    teardown_end = time.perf_counter()
    steady = last - first
    return {"samples_per_s": steady_samples / steady if steady > 0 else 0.0,
            "mb_per_s": steady_bytes / 1e6 / steady if steady > 0 else 0.0,
            "first_batch_s": first - start, "batches": taken, "wall_s": last - start,
            "samples": samples, "teardown_s": teardown_end - loop_end}


def parse_list(option, text, minimum, unique=True):
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        fail(f"{option}: '{text}' is not a comma list of whole numbers")
    if any(v < minimum for v in values) or (unique and len(set(values)) != len(values)):
        fail(f"{option}: '{text}': give distinct whole numbers >= {minimum}")
    return values


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workload", choices=["synthetic", "fmnist"], default="fmnist")
    p.add_argument("--data-dir", default=DEFAULT_DATA_DIR)
    p.add_argument("--sample-shape", default="3,224,224")
    p.add_argument("--workers", default="2")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--batches", type=int, default=200)
    p.add_argument("--prefetch", type=int, default=2)
    args = p.parse_args()
    args.sample_shape = parse_list("--sample-shape", args.sample_shape, 1, unique=False)
    args.workers = parse_list("--workers", args.workers, 0)
    if args.batch_size < 1 or args.batches < 2 or args.prefetch < 1:
        fail("--batch-size and --prefetch must be >= 1, --batches >= 2")
    return args


def main():
    args = parse_args()
    torch.set_num_threads(1)
    if args.workload == "synthetic":
        dataset = SyntheticDataset(args.sample_shape, args.batches * args.batch_size)
    else:
        dataset = FmnistDataset(args.data_dir)
    if len(dataset) < args.batch_size:
        fail(f"--batch-size: {args.batch_size} is more than the {len(dataset)} samples")
    for workers in args.workers:
        print(f"pytorch_dataloader.py: {args.workload} workers={workers}", file=sys.stderr)
        result = {"loader": "pytorch", "workload": args.workload, "workers": workers,
                  "batch_size": args.batch_size, "prefetch": args.prefetch}
        result.update(measure(dataset, workers, args.batch_size, args.batches, args.prefetch))
        result["dataset_size"] = len(dataset)
        if args.workload == "synthetic":
            result["sample_shape"] = args.sample_shape
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
