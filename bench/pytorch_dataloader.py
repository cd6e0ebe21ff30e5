#!/usr/bin/env python3
"""PyTorch's own torch.utils.data.DataLoader on mploader-bench's workloads, measured the same way.

Run with the project's Python (.venv, torch 2.13; any python3 with torch and numpy works).
mploader-bench --loader pytorch calls it; it can also run alone:

    .venv/bin/python3 bench/pytorch_dataloader.py --workload synthetic --workers 0,2

Prints one JSON object per configuration per line on stdout (the same fields as
mploader-bench --json); progress goes to stderr. Each configuration runs two ways where the
workload allows: loader "pytorch", a dataset with __getitem__ only (one call per sample, then
default_collate: what most datasets do), and loader "pytorch-getitems", the same dataset with
__getitems__ (PyTorch 2.x fetches a whole batch of indices with one call: one gather per batch,
and collate_fn passes the batch through). The tar workload runs "pytorch" as an
IterableDataset over the tarfile module and, when the package is installed, loader
"webdataset": the webdataset package's own pipeline on the same shards. Same semantics as the
C++ runners: sequential order, drop_last, fork start method, persistent workers (mploader
keeps its workers across epochs too), one intra-op thread, more epochs when one is not enough.
"""
import argparse
import gc
import gzip
import io
import json
import os
import sys
import time
import zlib

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset, get_worker_info

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

    def gather(self, indices):
        """The batch of `indices` in one op per field (see BatchedFetch)."""
        idx = torch.tensor(indices, dtype=torch.int64)
        fill = (idx % 256).to(torch.uint8).view(-1, *([1] * len(self.shape)))
        return {"image": fill.expand(len(indices), *self.shape).contiguous(), "label": idx % 10}


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

    def gather(self, indices):
        """The batch of `indices` in one op per field (see BatchedFetch)."""
        idx = torch.tensor(indices, dtype=torch.int64)
        return {"image": self.images[idx], "label": self.labels[idx]}


class BatchedFetch(Dataset):
    """`dataset` with __getitems__, which PyTorch 2.x's DataLoader calls with a whole batch of
    indices instead of __getitem__ per index (torch.utils.data._utils.fetch)."""

    def __init__(self, dataset):
        self.dataset = dataset

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, index):
        return self.dataset[index]

    def __getitems__(self, indices):
        return self.dataset.gather(indices)


def keep_batch(batch):
    """collate_fn for BatchedFetch: __getitems__ returned the batch already."""
    return batch


class JpegDataset(Dataset):
    """mploader-bench's jpeg workload as torchvision's ImageFolder with its PIL path would run
    it (torchvision itself is not in the project's environment): labels from the sorted class
    folders, PIL decode and convert('RGB'), RandomResizedCrop(224)'s get_params, the crop
    resized with PIL's BILINEAR (antialiased, as torchvision's resized_crop on a PIL image),
    RandomHorizontalFlip, ToTensor and Normalize(ImageNet). label: -1 - index for a file PIL
    cannot read (its image is zeros)."""

    MEAN = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
    STD = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)
    EXTENSIONS = (".jpg", ".jpeg", ".png")

    def __init__(self, data_dir):
        try:
            from PIL import Image  # noqa: F401
        except ImportError:
            fail(f"jpeg: PIL is not installed for {sys.executable}, so PyTorch's side cannot "
                 "decode JPEG here; run scripts/install-deps (pillow), or leave out "
                 "--loader pytorch")
        classes = sorted(e.name for e in os.scandir(data_dir) if e.is_dir())
        self.paths, self.labels = [], []
        for label, name in enumerate(classes):
            found = sorted(os.path.join(root, f) for root, _, files in
                           os.walk(os.path.join(data_dir, name), followlinks=True)
                           for f in files if f.lower().endswith(self.EXTENSIONS))
            self.paths += found
            self.labels += [label] * len(found)
        if not self.paths:
            fail(f"--data-dir: no class folder of .jpg, .jpeg or .png files in {data_dir}")

    def __len__(self):
        return len(self.paths)

    @staticmethod
    def crop_params(height, width, seed):
        """torchvision's RandomResizedCrop.get_params, then the flip, with a per-sample
        generator."""
        g = torch.Generator().manual_seed(seed & 0x7FFFFFFFFFFFFFFF)
        area = height * width
        log_ratio = torch.log(torch.tensor([3 / 4, 4 / 3]))
        for _ in range(10):
            target = area * torch.empty(1).uniform_(0.08, 1.0, generator=g).item()
            aspect = torch.exp(
                torch.empty(1).uniform_(log_ratio[0], log_ratio[1], generator=g)).item()
            w, h = round((target * aspect) ** 0.5), round((target / aspect) ** 0.5)
            if 0 < w <= width and 0 < h <= height:
                top = torch.randint(0, height - h + 1, (1,), generator=g).item()
                left = torch.randint(0, width - w + 1, (1,), generator=g).item()
                return top, left, h, w, torch.rand(1, generator=g).item() < 0.5
        ratio = width / height
        w, h = width, height
        if ratio < 3 / 4:
            h = round(w / (3 / 4))
        elif ratio > 4 / 3:
            w = round(h * 4 / 3)
        h, w = min(h, height), min(w, width)
        return (height - h) // 2, (width - w) // 2, h, w, torch.rand(1, generator=g).item() < 0.5

    def __getitem__(self, index):
        from PIL import Image
        try:
            with Image.open(self.paths[index]) as im:
                rgb = im.convert("RGB")
        except (OSError, ValueError, SyntaxError):
            return {"image": torch.zeros(3, 224, 224), "label": torch.tensor(-1 - index)}
        return {"image": self.transform(rgb, index), "label": torch.tensor(self.labels[index])}

    @classmethod
    def transform(cls, rgb, index):
        """The training transform of an RGB PIL image, its randomness seeded by `index`."""
        from PIL import Image
        top, left, h, w, flip = cls.crop_params(rgb.height, rgb.width, index * 7919 + 1)
        out = rgb.resize((224, 224), Image.BILINEAR, box=(left, top, left + w, top + h))
        if flip:
            out = out.transpose(Image.FLIP_LEFT_RIGHT)
        x = torch.from_numpy(np.asarray(out).copy()).permute(2, 0, 1).float()
        return (x / 255 - cls.MEAN) / cls.STD


class StreamDataset(IterableDataset):
    """mploader-bench's stream workload: (input, target) int64 windows of `context` tokens over
    a uint16 little-endian token file (corpus.bin, nanoGPT's layout) read through np.memmap,
    as mploader::TokenStream cuts it: windows back to back, dealt out to the DataLoader's
    workers in shards of WINDOWS_PER_SHARD consecutive windows (worker k takes shards k, k + W,
    ...), so that each worker reads its part of the file front to back. TokenStream also moves
    the windows by an offset per epoch; that changes which tokens, not how much work."""

    WINDOWS_PER_SHARD = 64  # as the C++ side's TokenStreamOptions::windows_per_shard

    def __init__(self, path, context):
        try:
            tokens = os.path.getsize(path) // 2
        except OSError as e:
            fail(f"--data-dir: cannot read the stream corpus {path} ({e}); run mploader-bench "
                 "--workload stream once to make it, or pass a uint16 token file")
        if tokens < context + 1:
            fail(f"--context: {context} tokens is more than the {tokens}-token corpus {path} "
                 f"holds for one window; give at most --context {tokens - 1}")
        self.context = context
        self.windows = max(1, (tokens - context) // context)
        # Mapped before the workers fork: they share the mapping, and the page cache's pages.
        self.tokens = np.memmap(path, dtype="<u2", mode="r")

    def __iter__(self):
        info = get_worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        per_shard = self.WINDOWS_PER_SHARD
        shards = (self.windows + per_shard - 1) // per_shard
        for shard in range(worker, shards, workers):
            for window in range(shard * per_shard, min(self.windows, (shard + 1) * per_shard)):
                start = window * self.context
                ids = torch.from_numpy(
                    self.tokens[start:start + self.context + 1].astype(np.int64))
                yield {"input": ids[:-1], "target": ids[1:]}


def tar_paths(data_dir):
    """The .tar files of `data_dir`, sorted, as TarShards::from_directory takes them."""
    try:
        paths = sorted(os.path.join(data_dir, n) for n in os.listdir(data_dir)
                       if n.endswith(".tar"))
    except OSError as e:
        fail(f"--data-dir: cannot list {data_dir} ({e}); run mploader-bench --workload tar once "
             "to pack the shards, or pass a folder of .tar files")
    if not paths:
        fail(f"--data-dir: no .tar file in {data_dir}; pass a folder of WebDataset shards")
    return paths


class TarDataset(IterableDataset):
    """mploader-bench's tar workload the plain way: worker k of W reads tars k, k + W, ... with
    the tarfile module front to back, groups consecutive members by key (the WebDataset
    convention) and yields each <key>.jpg + <key>.cls sample through the jpeg workload's
    transform (JpegDataset.transform, seeded by the key's number)."""

    def __init__(self, data_dir):
        import tarfile
        self.paths = tar_paths(data_dir)
        self.samples = 0
        for path in self.paths:  # headers only: the count the batch-size check needs
            with tarfile.open(path) as tar:
                self.samples += sum(1 for n in tar.getnames() if n.endswith(".jpg"))

    @staticmethod
    def decode(key, members):
        from PIL import Image
        with Image.open(io.BytesIO(members["jpg"])) as im:
            rgb = im.convert("RGB")
        return {"image": JpegDataset.transform(rgb, int(key)),
                "label": torch.tensor(int(members["cls"]))}

    def __iter__(self):
        import tarfile
        info = get_worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        for path in self.paths[worker::workers]:
            with tarfile.open(path) as tar:
                for key, members in tar_groups(tar):
                    yield self.decode(key, members)


def tar_groups(tar):
    """(key, {extension: bytes}) of each sample of an open tarfile, in order: consecutive
    members with one key ("x.jpg", "x.cls") form a sample, as WebDataset groups them."""
    key, members = None, {}
    for m in tar:
        if not m.isfile():
            continue
        k, _, ext = m.name.partition(".")
        if k != key and members:
            yield key, members
            members = {}
        key, members[ext] = k, tar.extractfile(m).read()
    if members:
        yield key, members


def webdataset_pipeline(data_dir):
    """The tar workload through the webdataset package's own pipeline: shards split among the
    DataLoader's workers by its defaults (split_by_worker), PIL decode to RGB, .cls to int, and
    the jpeg workload's transform seeded by the key's number."""
    try:
        import webdataset as wds
    except ImportError:
        return None
    return (wds.WebDataset(tar_paths(data_dir), shardshuffle=False)
            .decode("pil").to_tuple("jpg", "cls", "__key__").map(webdataset_sample))


def webdataset_sample(sample):
    rgb, cls, key = sample
    return {"image": JpegDataset.transform(rgb, int(key)), "label": torch.tensor(cls)}


class TorchvisionFolder(Dataset):
    """torchvision's own ImageFolder and ImageNet training transform, when this interpreter has
    torchvision: the peer mploader's images are measured against. Its crops come from
    torch's global generator, so its batches differ from the other sides'."""

    def __init__(self, folder):
        self.folder = folder

    def __len__(self):
        return len(self.folder)

    def __getitem__(self, index):
        image, label = self.folder[index]
        return {"image": image, "label": torch.tensor(label)}


def torchvision_folder(data_dir):
    try:
        import torchvision
        from torchvision import datasets, transforms
    except ImportError:
        return None, None
    transform = transforms.Compose([
        transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip(), transforms.ToTensor(),
        transforms.Normalize(JpegDataset.MEAN.view(-1).tolist(),
                             JpegDataset.STD.view(-1).tolist())])
    how = (f"torchvision {torchvision.__version__}'s ImageFolder (PIL), RandomResizedCrop(224), "
           "RandomHorizontalFlip, ToTensor, Normalize; default_collate")
    return TorchvisionFolder(datasets.ImageFolder(data_dir, transform=transform)), how


JPEG_NOTE = ("PyTorch side: torchvision's ImageFolder PIL path, written out (so that it runs "
             "without torchvision, with crops seeded per sample): PIL decode and convert RGB, "
             "RandomResizedCrop(224) parameters as torchvision's, PIL BILINEAR (antialiased) "
             "resize of the crop, flip, ToTensor, Normalize")


HOW = {"stream": "IterableDataset over np.memmap, sharded by get_worker_info(), default_collate",
       "tar": "IterableDataset over tarfile, tars sharded by get_worker_info(), default_collate"}


def make_loader(dataset, workers, batch_size, prefetch):
    kwargs = dict(batch_size=batch_size, shuffle=False, drop_last=True, num_workers=workers)
    if isinstance(dataset, BatchedFetch):
        kwargs.update(collate_fn=keep_batch)
    if workers > 0:
        kwargs.update(multiprocessing_context="fork", prefetch_factor=prefetch,
                      persistent_workers=True)
    return DataLoader(dataset, **kwargs)


def batch_bytes(batch):
    return sum(t.numel() * t.element_size() for t in batch.values())


def measure(dataset, workers, batch_size, batches, prefetch, step_s=0.0):
    """Times one configuration exactly as mploader-bench's RunTimer does."""
    start = time.perf_counter()
    loader = make_loader(dataset, workers, batch_size, prefetch)
    taken = samples = steady_samples = steady_bytes = corrupt = 0
    first = last = None
    waits, examples = [], []
    while taken < batches:
        before = taken
        wait_start = time.perf_counter()
        for batch in loader:
            now = time.perf_counter()
            if taken > 0:
                waits.append((now - wait_start) * 1e3)
            if "label" in batch:  # the stream workload has none
                bad = (batch["label"] < 0).nonzero().flatten()
                corrupt += len(bad)
                for i in bad.tolist():
                    idx = -1 - int(batch["label"][i])
                    if len(examples) < 5 and idx not in examples:
                        examples.append(idx)
            n = next(iter(batch.values())).size(0)  # rows of "image", or stream's "input"
            if taken == 0:
                first = now
            else:
                steady_samples += n
                steady_bytes += batch_bytes(batch)
            last, taken, samples = now, taken + 1, samples + n
            if step_s > 0:
                time.sleep(step_s)  # the training step, with the batch held
            del batch
            if taken == batches:
                break
            wait_start = time.perf_counter()
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
            "samples": samples, "teardown_s": teardown_end - loop_end,
            "wait_p50_ms": percentile(waits, 50), "wait_p99_ms": percentile(waits, 99),
            "corrupt": corrupt, "corrupt_examples": examples}


def percentile(values, p):
    """Nearest rank, as mploader-bench's RunTimer."""
    if not values:
        return 0.0
    values = sorted(values)
    rank = max(1, min(len(values), int(np.ceil(p / 100 * len(values)))))
    return values[rank - 1]


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
    p.add_argument("--workload", choices=["synthetic", "fmnist", "jpeg", "stream", "tar"],
                   default="fmnist")
    p.add_argument("--data-dir", default=DEFAULT_DATA_DIR)
    p.add_argument("--sample-shape", default="3,224,224")
    p.add_argument("--context", type=int, default=1024, help="stream: tokens per window")
    p.add_argument("--workers", default="2")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--batches", type=int, default=200)
    p.add_argument("--prefetch", type=int, default=2)
    p.add_argument("--step-ms", type=int, default=0,
                   help="the training step: how long the loop holds each batch")
    args = p.parse_args()
    args.sample_shape = parse_list("--sample-shape", args.sample_shape, 1, unique=False)
    args.workers = parse_list("--workers", args.workers, 0)
    if args.batch_size < 1 or args.batches < 2 or args.prefetch < 1 or args.context < 1:
        fail("--batch-size, --prefetch and --context must be >= 1, --batches >= 2")
    return args


def main():
    args = parse_args()
    torch.set_num_threads(1)
    if args.workload == "synthetic":
        dataset = SyntheticDataset(args.sample_shape, args.batches * args.batch_size)
    elif args.workload == "jpeg":
        dataset = JpegDataset(args.data_dir)
    elif args.workload == "stream":
        dataset = StreamDataset(args.data_dir, args.context)
    elif args.workload == "tar":
        dataset = TarDataset(args.data_dir)
    else:
        dataset = FmnistDataset(args.data_dir)
    sizes = {"stream": lambda: dataset.windows, "tar": lambda: dataset.samples}
    size = sizes.get(args.workload, lambda: len(dataset))()
    if size < args.batch_size:
        fail(f"--batch-size: {args.batch_size} is more than the {size} samples")
    ways = [("pytorch", dataset, HOW.get(args.workload, "__getitem__ per sample, default_collate"))]
    if args.workload == "tar":
        pipeline = webdataset_pipeline(args.data_dir)
        if pipeline is None:
            print("pytorch_dataloader.py: webdataset is not installed for "
                  f"{sys.executable}; pip install webdataset to measure it too", file=sys.stderr)
        else:
            ways.append(("webdataset", pipeline, "webdataset's WebDataset(shardshuffle=False)"
                         ".decode('pil').to_tuple('jpg', 'cls'), default_collate"))
    if args.workload == "jpeg":
        folder, how = torchvision_folder(args.data_dir)
        if folder is not None:
            ways.append(("torchvision", folder, how))
    if hasattr(dataset, "gather"):
        ways.append(("pytorch-getitems", BatchedFetch(dataset),
                     "__getitems__: one gather per batch, collate_fn passes it through"))
    version = f"PyTorch {torch.__version__} ({sys.executable})"
    for workers in args.workers:
        for name, data, how in ways:
            print(f"pytorch_dataloader.py: {name} {args.workload} workers={workers}",
                  file=sys.stderr)
            result = {"loader": name, "workload": args.workload, "workers": workers,
                      "batch_size": args.batch_size, "prefetch": args.prefetch}
            result.update(measure(data, workers, args.batch_size, args.batches, args.prefetch,
                                  args.step_ms / 1000.0))
            result["dataset_size"] = size
            result["torch_version"] = torch.__version__
            result["note"] = f"{version}, {how}"
            if args.workload in ("jpeg", "tar") and name != "torchvision":
                result["note"] += "; " + JPEG_NOTE
            if args.workload == "synthetic":
                result["sample_shape"] = args.sample_shape
            if args.workload == "stream":
                result["context"] = args.context
                result["tokens_per_s"] = result["samples_per_s"] * args.context
            print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
