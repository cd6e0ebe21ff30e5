"""What runs in mploader's worker processes for a Python dataset."""
import random
import traceback

import torch
import torch.utils.data._utils.worker as _torch_worker

from ._structure import flatten


def fetcher(dataset):
    """fetch(index): the sample's leaves (mploader._C calls it in the worker)."""
    def fetch(index):
        return flatten(dataset[index])
    return fetch


def describe_exception(kind, value, trace):
    """(qualified type name, traceback as text) for a worker's exception."""
    name = f"{kind.__module__}.{kind.__qualname__}"
    return name, "".join(traceback.format_exception(kind, value, trace)).rstrip("\n")


def starter(dataset, worker_init_fn):
    """start(...): called in each worker process as it starts (restarts included): sets what
    torch.utils.data.get_worker_info() returns, seeds the generators and calls the user's
    worker_init_fn, as torch's worker loop does."""
    def start(worker_id, num_workers, seed, epoch, rank, world_size):
        torch.set_num_threads(1)
        seed = int(seed) & 0xFFFFFFFFFFFFFFFF
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
