"""The same Python datasets through torch's DataLoader and mploader's, side by side in one run:

    python -m mploader.bench [--workers 2] [--batch-size 32] [--batches 200] [--repeat 3]

Two datasets whose __getitem__ costs little, so that what is measured is the loader's own work
of moving samples to the loop: "image", a 3x224x224 uint8 tensor and a label, and "small", a
dict of small tensors, a number and a str. Each run iterates one epoch of --batches batches with
persistent workers, the first epoch's batches skipped (workers starting), and reports samples
per second; the loaders take turns, --repeat times, and the median counts. Ratios from one run
on one machine only: compare them, not the rates, across machines.
"""
import argparse
import statistics
import sys
import time

import torch

import mploader


class ImageDataset(torch.utils.data.Dataset):
    """A 3x224x224 uint8 image and its label, made from the index (a fresh tensor each time,
    as a decoder would make)."""

    def __init__(self, n):
        self.n = n
        self.base = torch.randint(0, 256, (3, 224, 224), dtype=torch.uint8,
                                  generator=torch.Generator().manual_seed(0))

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"image": self.base.roll(i % 7, dims=2), "label": i % 1000}


class SmallDataset(torch.utils.data.Dataset):
    """A dict of small tensors, a number and a str, as a tokenised text sample might be."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"tokens": torch.arange(i % 50, i % 50 + 64), "mask": torch.ones(64, dtype=torch.bool),
                "score": float(i) / 7, "label": i % 10, "id": f"sample-{i:08d}"}


DATASETS = {"image": ImageDataset, "small": SmallDataset}
LOADERS = {"torch": torch.utils.data.DataLoader, "mploader": mploader.DataLoader}


def samples_per_second(loader_class, dataset, args):
    loader = loader_class(dataset, batch_size=args.batch_size, num_workers=args.workers,
                          persistent_workers=args.workers > 0, shuffle=True)
    for _ in loader:  # the first epoch starts the workers
        pass
    start = time.perf_counter()
    count = 0
    for batch in loader:
        count += len(batch["label"])
    elapsed = time.perf_counter() - start
    del loader
    return count / elapsed


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m mploader.bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--batches", type=int, default=200, help="batches per epoch")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--datasets", default="image,small",
                        help=f"comma-separated, of {', '.join(DATASETS)}")
    args = parser.parse_args(argv)
    names = args.datasets.split(",")
    unknown = [n for n in names if n not in DATASETS]
    if unknown or args.workers < 0 or args.batch_size < 1 or args.batches < 1 or args.repeat < 1:
        parser.error(f"--datasets takes {', '.join(DATASETS)} (got {', '.join(unknown)}); "
                     "--workers >= 0, --batch-size, --batches and --repeat >= 1")
    torch.manual_seed(0)
    print(f"# {time.strftime('%Y-%m-%d')}, torch {torch.__version__}, mploader "
          f"{mploader.__version__}, {args.workers} workers, batch {args.batch_size}, "
          f"{args.batches} batches per epoch, median of {args.repeat}")
    print(f"{'dataset':8} {'torch samples/s':>16} {'mploader samples/s':>19} {'mploader/torch':>15}")
    for name in names:
        dataset = DATASETS[name](args.batches * args.batch_size)
        rates = {kind: [] for kind in LOADERS}
        for _ in range(args.repeat):
            for kind, loader_class in LOADERS.items():
                rates[kind].append(samples_per_second(loader_class, dataset, args))
        torch_rate, mp_rate = (statistics.median(rates[k]) for k in LOADERS)
        print(f"{name:8} {torch_rate:16.0f} {mp_rate:19.0f} {mp_rate / torch_rate:14.2f}x")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
