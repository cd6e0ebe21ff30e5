#!/usr/bin/env python3
"""mploader's C++ readers driven from Python, side by side in one run with the same reader
driven from C++ (mploader-bench) and with the Python peers mploader-bench runs
(bench/pytorch_dataloader.py: torchvision's ImageFolder, webdataset, Hugging Face datasets):

    .venv/bin/python bench/python_readers.py --images /tmp/photos/jpeg [--tar DIR]
        [--parquet-rows 20000]
        [--bench build/bench/mploader-bench] [--peer-python /path/to/torchvision-venv/bin/python]
        [--workers 2] [--batch-size 32] [--batches 40]

Run it with a Python that has the mploader package (scripts/test-python installs one into
build-python/venv). Each measurement is one configuration, the same for every side: batch
size, workers, fork, the ImageNet training transform (RandomResizedCrop(224), flip, ToTensor,
Normalize). The C++ rows come from `mploader-bench --json`; the Python peer runs under
--peer-python (a venv with torchvision for its ImageFolder). Prints a table of samples/s and
the ratios; dated rows go to docs/benchmarks.md.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch

import mploader
from mploader import vision

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
HERE = os.path.dirname(os.path.abspath(__file__))


def training_transform():
    return [vision.RandomResizedCrop(224), vision.RandomHorizontalFlip(), vision.ToTensor(),
            vision.Normalize(MEAN, STD)]


def python_rate(dataset, args, label="label"):
    """Samples/s of mploader.DataLoader over ``dataset``: the first batch (workers starting)
    left out, as mploader-bench leaves it out."""
    loader = mploader.DataLoader(dataset, batch_size=args.batch_size, num_workers=args.workers,
                                 persistent_workers=args.workers > 0, drop_last=True)
    count, start, done = 0, None, 0
    while done < args.batches:
        for batch in loader:
            if start is None:
                start = time.perf_counter()
            else:
                count += len(batch[label])
            done += 1
            if done == args.batches:
                break
    return count / (time.perf_counter() - start)


def json_rows(command, env=None):
    run = subprocess.run(command, capture_output=True, text=True, env=env)
    if run.returncode != 0:
        sys.exit(f"python_readers.py: {' '.join(command)} failed:\n{run.stderr[-3000:]}")
    return [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]


def bench_rows(args, workload, data_dir, loaders):
    """mploader-bench's rows for ``workload``: {loader: samples/s}."""
    env = dict(os.environ)
    if args.peer_python:
        env["MPLOADER_BENCH_PYTHON"] = args.peer_python
    rows = json_rows([args.bench, "--workload", workload, "--data-dir", data_dir, "--json",
                      "--workers", str(args.workers), "--batch-size", str(args.batch_size),
                      "--batches", str(args.batches), "--loader", loaders], env)
    return {row["loader"]: row["samples_per_s"] for row in rows}


def measure_images(args):
    cpp = bench_rows(args, "jpeg", args.images, "mploader,pytorch")
    dataset = vision.ImageFolder(args.images, training_transform(), seed=0)
    ours = python_rate(dataset, args)
    peer = "torchvision" if "torchvision" in cpp else "pytorch"
    return [("images", ours, cpp.get("mploader"), peer, cpp.get(peer))]


def measure_tar(args):
    cpp = bench_rows(args, "tar", args.tar, "mploader,pytorch")
    # As mploader-bench's tar workload reads them (bench/workloads/tar_workload.cc).
    dataset = mploader.TarShards(args.tar, keys=["jpg", "cls"], int_keys=["cls"],
                                 image_keys={"jpg": training_transform()})
    ours = python_rate(dataset, args, label="cls")
    return [("tar", ours, cpp.get("mploader"), "webdataset", cpp.get("webdataset"))]


def parquet_cache(rows):
    base = os.environ.get("MPLOADER_BENCH_CACHE") or os.path.expanduser("~/.cache/mploader-bench")
    return os.path.join(base, f"parquet-{rows}")


def epoch_rate(make_dataset, args, seed):
    """Samples/s of one shuffled epoch, the DataLoader's start included and the dataset's
    (its files' footers read) left out, as mploader-bench's parquet workload times it."""
    dataset = make_dataset()
    start = time.perf_counter()
    loader = mploader.DataLoader(dataset, batch_size=args.batch_size,
                                 num_workers=args.workers, shuffle=True, shuffle_buffer=1024)
    torch.manual_seed(seed)
    count = checksum = 0
    for batch in loader:  # the checksum mploader-bench's loop takes of each batch (run_pq.cc)
        count += len(batch["label"])
        checksum += int(batch["label"].sum())
        if "features" in batch:
            checksum += int((batch["features"] * 4).round().long().sum())
        else:
            checksum += sum(len(text.encode()) for text in batch["text"])
    return count / (time.perf_counter() - start)


def measure_parquet(args):
    """mploader-bench --workload parquet's layouts: its rows (mploader from C++, Hugging Face
    datasets) and ParquetShards from Python over the same files."""
    run = json_rows([args.bench, "--workload", "parquet", "--rows", str(args.parquet_rows),
                     "--workers", str(args.workers), "--batch-size", str(args.batch_size),
                     "--rounds", "3", "--json"])
    summary = next(r for r in run if r.get("summary"))
    rows = []
    for layout, rates in summary["samples_per_s"].items():
        files = sorted(os.path.join(parquet_cache(args.parquet_rows), f)
                       for f in os.listdir(parquet_cache(args.parquet_rows))
                       if f.startswith(layout + "-") and f.endswith(".parquet"))
        ours = statistics.median(epoch_rate(lambda: mploader.ParquetShards(files), args, r)
                                 for r in range(3))
        rows.append((f"parquet {layout}", ours, rates["mploader"], "datasets", rates["hf"]))
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--images", help="an ImageFolder (bench/make_photo_set.py writes some)")
    p.add_argument("--tar", help="a folder of WebDataset shards of <key>.jpg + <key>.cls")
    p.add_argument("--parquet-rows", type=int, default=0,
                   help="rows of each layout of mploader-bench's parquet workload (0: skip it)")
    p.add_argument("--bench", default=os.path.join(HERE, "..", "build", "bench",
                                                   "mploader-bench"))
    p.add_argument("--peer-python", help="the Python of the peers (torchvision's venv)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--batches", type=int, default=40)
    args = p.parse_args()
    if not (args.images or args.tar or args.parquet_rows):
        p.error("give --images, --tar, --parquet-rows, or several")
    if not os.access(args.bench, os.X_OK):
        p.error(f"--bench: no mploader-bench at {args.bench}; build it (scripts/test builds "
                "build/bench/mploader-bench) or give its path")
    torch.set_num_threads(1)
    rows = ((measure_images(args) if args.images else []) +
            (measure_tar(args) if args.tar else []) +
            (measure_parquet(args) if args.parquet_rows else []))
    print(f"# {time.strftime('%Y-%m-%d')}: {args.workers} workers, batch {args.batch_size}, "
          f"{args.batches} batches; samples/s")
    print(f"{'reader':16} {'from Python':>12} {'from C++':>9} {'Python/C++':>11}  peer")
    for name, ours, cpp, peer, peer_rate in rows:
        versus = f"{peer} {peer_rate:.1f}: {ours / peer_rate:.2f}x" if peer_rate else f"{peer}: -"
        print(f"{name:16} {ours:12.1f} {cpp:9.1f} {ours / cpp:10.2f}x  {versus}")


if __name__ == "__main__":
    main()
