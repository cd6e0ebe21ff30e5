"""The IterableDataset of the torch-parity tests (test_parity_iterable.py), beside
parity_datasets.py's map-style ones; module level, since the workers are forked or spawned."""
import os
import time

import torch

from parity_datasets import ParityValueError


class RangeStream(torch.utils.data.IterableDataset):
    """torch's documented example: [start, end) split among the workers by get_worker_info(),
    each item a dict of its number, a tensor and a str; ``fail_at`` raises ParityValueError
    there, ``sleep`` slows each item."""

    def __init__(self, start, end, fail_at=None, sleep=0.0):
        self.start, self.end, self.fail_at, self.sleep = start, end, fail_at, sleep

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        lo, hi = self.start, self.end
        if info is not None:
            per = -(-(self.end - self.start) // info.num_workers)
            lo = self.start + info.id * per
            hi = min(lo + per, self.end)
        for i in range(lo, hi):
            if i == self.fail_at:
                raise ParityValueError(f"item {i} is bad")
            if self.sleep:
                time.sleep(self.sleep)
            yield {"i": i, "x": torch.full((2,), float(i)), "name": f"n{i}", "pid": os.getpid()}

    def __len__(self):
        return self.end - self.start


def describe_items(items):
    """A collate_fn for RangeStream's items: their numbers, as a list."""
    return {"items": [item["i"] for item in items]}
