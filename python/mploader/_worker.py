"""What runs in mploader's worker processes for a Python dataset."""
import random
import traceback

import torch
import torch.utils.data._utils.worker as _torch_worker
from torch.utils.data import default_collate

from ._structure import SampleShape, flatten_collated


class SampleFetch:
    """fetch(index): the sample's leaves (mploader._C calls it in the worker); start_batch():
    the next sample begins a batch, whose structure the later samples follow (SampleShape)."""

    def __init__(self, dataset):
        self.dataset = dataset
        self.shape = None

    def start_batch(self):
        self.shape = None

    def __call__(self, index):
        sample = self.dataset[index]
        if self.shape is None:
            self.shape = SampleShape(sample, index)
            return self.shape.first
        return self.shape.flatten(sample, index)


# The engine carries a worker's error message in 1024 bytes; the end of a traceback (the
# innermost frames and the exception itself) is what says most.
_MESSAGE_BYTES = 1000


def raw_fetcher(dataset):
    """fetch(index): the sample as __getitem__ returns it, for a collate_fn."""
    def fetch(index):
        return dataset[index]
    return fetch


def collator(collate_fn):
    """collate(samples): collate_fn's batch as [(name, Tensor)] (run where the batch is made)."""
    def collate(samples):
        return flatten_collated(collate_fn(samples))
    return collate


class DeferredIndex:
    """What the fetch of a dataset with __getitems__ keeps per sample: its index, read with the
    rest of the batch by one __getitems__ call when the batch is collated."""

    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index


class DeferredFetch:
    """fetch(index) for a dataset with __getitems__ (a class, not a closure: spawn pickles it)."""

    def __call__(self, index):
        return DeferredIndex(index)


class GetItems:
    """collate(samples) for a dataset with __getitems__: the batch's samples from one call, as
    torch's fetcher reads them, then collate_fn (default_collate)."""

    def __init__(self, dataset, collate_fn):
        self.dataset = dataset
        self.collate_fn = collate_fn or default_collate

    def __call__(self, deferred):
        return self.collate_fn(self.dataset.__getitems__([d.index for d in deferred]))


def has_getitems(dataset):
    """Whether torch's fetcher would call the dataset's __getitems__."""
    return bool(getattr(dataset, "__getitems__", None))


class OneSample:
    """The collate of batch_size=None: the batch's one sample through ``convert``
    (default_convert or the user's collate_fn). A class, not a closure: spawn pickles it."""

    def __init__(self, convert):
        self.convert = convert

    def __call__(self, samples):
        return self.convert(samples[0])


def describe_exception(kind, value, trace):
    """(qualified type name, traceback as text) for a worker's exception; a traceback too long
    for the engine keeps its first line and its end."""
    name = f"{kind.__module__}.{kind.__qualname__}"
    text = "".join(traceback.format_exception(kind, value, trace)).rstrip("\n")
    encoded = text.encode("utf-8")
    if len(encoded) > _MESSAGE_BYTES:
        first = text.split("\n", 1)[0]
        marker = "\n  ... (earlier frames left out)\n"
        keep = _MESSAGE_BYTES - len(first.encode("utf-8")) - len(marker)
        tail = encoded[-keep:].decode("utf-8", errors="ignore")
        text = first + marker + tail[tail.find("\n") + 1:]
    return name, text


def starter(dataset, worker_init_fn):
    """start(...): called in each worker process as it starts (restarts included): sets what
    torch.utils.data.get_worker_info() returns, seeds the generators and calls the user's
    worker_init_fn, as torch's worker loop does."""
    def start(worker_id, num_workers, seed, epoch, rank, world_size):
        torch.set_num_threads(1)
        # 63 bits, as torch's worker seeds: a sample may carry torch.initial_seed(), and an
        # int64 holds it (PyTorch's own worker-seed tests return it).
        seed = int(seed) & 0x7FFFFFFFFFFFFFFF
        random.seed(seed)
        torch.manual_seed(seed)
        try:
            import numpy as np
            np.random.seed([seed & 0xFFFFFFFF, seed >> 32])
        except ImportError:
            pass
        _torch_worker._worker_info = _torch_worker.WorkerInfo(
            id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        if worker_init_fn is not None:
            worker_init_fn(worker_id)
    return start
