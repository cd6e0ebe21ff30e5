"""mploader.DataLoader against torch's over an IterableDataset: each worker iterates its own
copy, split by get_worker_info(), and batches its items; the epoch ends when every worker's
iterator is done. The workers' batches may interleave otherwise than torch's round-robin, so
batches are compared as a whole and in each worker's own order.

Ported from PyTorch's test/test_dataloader.py (its IterableDataset cases); parity.py says how
both loaders are compared.
"""
import os
import signal

import pytest

import mploader
import parity_datasets as pds
import parity_iterables
from parity import KINDS, WORKERS, assert_same_batches, error_of, make_loader


def by_first_item(batches, batched=True):
    return sorted(batches, key=lambda b: int(b["i"][0]) if batched else b["i"])


@pytest.mark.parametrize("num_workers", WORKERS)
@pytest.mark.parametrize("batch_size,drop_last", [(5, False), (5, True), (None, False)])
def test_the_same_batches_as_torch_epoch_after_epoch(num_workers, batch_size, drop_last):
    results = {kind: [] for kind in KINDS}
    for kind in KINDS:
        loader = make_loader(kind, parity_iterables.RangeStream(0, 23), batch_size=batch_size,
                             num_workers=num_workers, drop_last=drop_last)
        for _ in range(2):
            results[kind].append(list(loader))
        assert len(loader) == len(make_loader("torch", parity_iterables.RangeStream(0, 23),
                                              batch_size=batch_size, drop_last=drop_last))
    for torch_epoch, ours in zip(results["torch"], results["mploader"]):
        for batch in ours:
            batch.pop("pid")
        for batch in torch_epoch:
            batch.pop("pid")
        if num_workers == 0:
            assert_same_batches(torch_epoch, ours)
        else:
            batched = batch_size is not None
            assert_same_batches(by_first_item(torch_epoch, batched), by_first_item(ours, batched))


def test_each_workers_batches_come_in_its_iterators_order():
    batches = list(mploader.DataLoader(parity_iterables.RangeStream(0, 40), batch_size=3, num_workers=2))
    for pid in {int(b["pid"][0]) for b in batches}:
        items = [i for b in batches if int(b["pid"][0]) == pid for i in b["i"].tolist()]
        assert items == sorted(items)


@pytest.mark.parametrize("num_workers", WORKERS)
def test_an_exception_in_iter_keeps_its_type(num_workers):
    errors = {kind: error_of(lambda kind=kind: list(make_loader(
        kind, parity_iterables.RangeStream(0, 20, fail_at=13), batch_size=4, num_workers=num_workers)))
        for kind in KINDS}
    for kind in KINDS:
        assert type(errors[kind]) is pds.ParityValueError, (kind, errors[kind])
        assert "item 13 is bad" in str(errors[kind])


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_fresh_workers_iterate_their_own_copies(method):
    loader = mploader.DataLoader(parity_iterables.RangeStream(0, 30), batch_size=4, num_workers=2,
                                 start_method=method, collate_fn=parity_iterables.describe_items)
    got = sorted(i for batch in loader for i in batch["items"])
    assert got == list(range(30))


def test_a_killed_worker_starts_its_iterator_again(tmp_path):
    loader = mploader.DataLoader(parity_iterables.RangeStream(0, 60, sleep=0.01), batch_size=2,
                                 num_workers=2, max_restarts=1, crash_dir=str(tmp_path),
                                 persistent_workers=True)
    it = iter(loader)
    first = next(it)
    os.kill(int(first["pid"][0]), signal.SIGKILL)
    items = first["i"].tolist() + [i for b in it for i in b["i"].tolist()]
    assert set(items) == set(range(60))  # every item, the killed worker's shard from its start
    shard = range(0, 30) if int(first["i"][0]) < 30 else range(30, 60)
    assert all(items.count(i) == 1 for i in range(60) if i not in shard)


def test_what_an_iterable_cannot_take():
    for kwargs, error in [(dict(shuffle=True), ValueError), (dict(sampler=[0, 1]), ValueError),
                          (dict(batch_sampler=[[0]]), ValueError),
                          (dict(num_workers="auto"), mploader.OptionError)]:
        with pytest.raises(error):
            mploader.DataLoader(parity_iterables.RangeStream(0, 4), **kwargs)
    loader = mploader.DataLoader(parity_iterables.RangeStream(0, 4), batch_size=2)
    next(iter(loader))
    with pytest.raises(mploader.OptionError, match="cannot replay"):
        loader.state_dict()
