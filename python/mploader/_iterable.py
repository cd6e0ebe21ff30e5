"""An IterableDataset in mploader's workers, as torch runs one: each worker iterates its own
copy (split by get_worker_info()), cuts batch_size items at a time from it and collates them
there; the epoch ends when every worker's iterator is exhausted.

The engine runs planned epochs, so an iterable epoch is a run of engine epochs of CHUNK
"batches" each, whose indices (index_of) name the epoch: each asks the worker that gets it for
its next batch of items. A worker whose iterator is done answers with a marker
batch; the epoch ends once every worker has. Each worker's batches come in its iterator's order;
how the workers' batches interleave follows which worker is free (torch's is round-robin).
A worker restarted after a crash starts its iterator again, as torch's would: its items may
come twice. Exactly-once delivery and resume need a planned dataset (a map-style Dataset, or
mploader's streams).
"""
import itertools

import torch
from torch.utils.data import default_collate, default_convert


CHUNK = 1024  # engine batches per engine epoch
# Index bits: epoch (generation) << 40 | chunk << 10 | batch in the chunk; 2**22 epochs of up
# to 2**30 chunks.
INDICES = 1 << 62


def index_of(generation, chunk, k):
    return (generation << 40) | (chunk << 10) | k
_EXHAUSTED_NAME = "d0:mploader.exhausted"


class _Exhausted:
    """What a worker's fetch returns once its iterator is done (or for a stale epoch)."""


EXHAUSTED = _Exhausted()


class IterableFetch:
    """fetch(index) in a worker: the next batch of items of this worker's own iterator."""

    def __init__(self, dataset, batch_size, drop_last):
        self.dataset, self.batch_size, self.drop_last = dataset, batch_size, drop_last
        self.generation = -1
        self.iterator = None

    def __call__(self, index):
        generation = index >> 40
        if generation < self.generation:
            return EXHAUSTED  # a task of an epoch that has ended
        if generation > self.generation:  # a new epoch: the iterator starts again
            self.generation, self.iterator = generation, iter(self.dataset)
        if self.iterator is None:
            return EXHAUSTED
        count = 1 if self.batch_size is None else self.batch_size
        items = list(itertools.islice(self.iterator, count))
        if len(items) < count:
            self.iterator = None  # done for this epoch
        if not items or (self.drop_last and len(items) < count):
            return EXHAUSTED
        return items


class IterableCollate:
    """collate(samples) where the batch's one "sample" is a list of items: the items through
    collate_fn (default_collate), or the one item through default_convert without batching."""

    def __init__(self, collate_fn, batched):
        self.collate_fn = collate_fn or (default_collate if batched else default_convert)
        self.batched = batched

    def __call__(self, samples):
        items = samples[0]
        if items is EXHAUSTED:
            return {"mploader.exhausted": torch.ones(1)}
        return self.collate_fn(items if self.batched else items[0])


def is_exhausted(tensors):
    """Whether a batch is a worker's marker that its iterator is done."""
    return len(tensors) == 1 and tensors[0][0] == _EXHAUSTED_NAME
