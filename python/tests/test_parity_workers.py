"""mploader.DataLoader against torch's: errors raised again with their types, timeouts,
get_worker_info, worker_init_fn, worker seeds and persistent workers.

Ported from PyTorch's test/test_dataloader.py; parity.py says how both loaders are compared.
"""
import functools
import gc
import math
import os
import time

import pytest
import torch

import parity_datasets as pds
from parity import (KINDS, WORKERS, assert_same_batch, assert_same_batches, assert_same_epochs,
                    error_of, make_loader, mploader_module, outcomes, without_traceback)



# ----------------------------------------------------------------------------------------------
# Exceptions raised by the dataset
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("num_workers", WORKERS)
def test_every_batch_raising_then_the_epoch_ends(num_workers):
    # torch's _test_error over ErrorDataset (no __getitem__): one NotImplementedError per
    # batch, then StopIteration.
    dataset = pds.NoGetitemDataset(11)
    kinds = KINDS
    if num_workers:
        # mploader reads sample 0 in a short-lived process before its workers start, to size
        # the shared memory (docs/python.md): a dataset whose every sample fails fails there,
        # with the dataset's own exception, when the first iteration starts.
        kinds = ["torch"]
        loader = make_loader("mploader", dataset, batch_size=2, shuffle=True, num_workers=2)
        with pytest.raises(NotImplementedError, match="sample 0"):
            iter(loader)
    for kind in kinds:
        torch.manual_seed(1)
        got = outcomes(make_loader(kind, dataset, batch_size=2, shuffle=True,
                                   num_workers=num_workers), 20)
        assert len(got) == math.ceil(11 / 2), (kind, got)
        for what, error in got:
            assert what == "error" and type(error) is NotImplementedError, (kind, error)


RAISED = ["ParityError", "ParityValueError", "KeyError", "IndexError", "ZeroDivisionError",
          "TwoArgumentError"]
MESSAGES = {"ParityError": "parity sample 3 is bad", "ParityValueError": "parity sample 3 has",
            "KeyError": "parity key 3", "IndexError": "parity index 3 out of range",
            "ZeroDivisionError": "integer division or modulo by zero",
            "TwoArgumentError": "parity sample 3 needs two arguments"}


# With num_workers=0 both let the dataset's exception object through as it is.
EXCEPTION_CASES = [(w, r) for w in WORKERS for r in RAISED]


@pytest.mark.parametrize("num_workers,raised", EXCEPTION_CASES)
def test_an_exception_in_getitem_keeps_its_type_and_the_epoch_goes_on(num_workers, raised):
    dataset = pds.RaisingDataset(raised, bad=[3, 9, 10], n=16)
    results = {k: outcomes(make_loader(k, dataset, batch_size=2, num_workers=num_workers), 20)
               for k in KINDS}
    shapes = {k: [what for what, _ in v] for k, v in results.items()}
    assert shapes["torch"] == ["batch", "error", "batch", "batch", "error", "error", "batch",
                               "batch"]
    assert shapes["mploader"] == shapes["torch"]
    for (what, e), (_, a) in zip(results["torch"], results["mploader"]):
        if what == "batch":
            assert_same_batch(e, a)
            continue
        assert type(a) is type(e), f"torch raises {type(e).__name__}, mploader {a!r}"
    torch_error, mp_error = results["torch"][1][1], results["mploader"][1][1]
    for kind, error in (("torch", torch_error), ("mploader", mp_error)):
        text = str(error)
        assert MESSAGES[raised] in text, (kind, text)
        if num_workers:
            # Raised again in the main process: what was caught, and the worker's traceback.
            assert f"Caught {raised}" in text, (kind, text)
            assert "Traceback (most recent call last)" in text, (kind, text)
            assert "parity_datasets.py" in text and "__getitem__" in text, (kind, text)


def test_without_workers_the_exception_object_itself_is_raised():
    dataset = pds.RaisingDataset("TwoArgumentError", bad=[3], n=6)
    errors = {k: error_of(lambda k=k: list(make_loader(k, dataset, batch_size=2)))
              for k in KINDS}
    for kind in KINDS:
        assert type(errors[kind]) is pds.TwoArgumentError, (kind, errors[kind])
        assert errors[kind].args == errors["torch"].args
        assert "Caught" not in str(errors[kind])


# ----------------------------------------------------------------------------------------------
# timeout
# ----------------------------------------------------------------------------------------------

def test_a_batch_slower_than_the_timeout_raises_a_runtime_error():
    # Sample 2 takes 1 s, the timeout is 0.2 s: batches 0 and 1 come, the third next() raises
    # (at the timeout, not when the slow batch comes).
    results = {}
    for kind in KINDS:
        loader = make_loader(kind, pds.SleepyDataset(slow=2, seconds=1.0), num_workers=2,
                             timeout=0.2)
        got = []
        it = iter(loader)
        for _ in range(3):
            start = time.monotonic()
            try:
                got.append(("batch", next(it).tolist(), time.monotonic() - start))
            except Exception as error:  # noqa: BLE001
                got.append(("error", without_traceback(error), time.monotonic() - start))
                break
        results[kind] = got
        del it, loader
    torch_got, mp_got = results["torch"], results["mploader"]
    assert [g[:2] for g in torch_got[:2]] == [("batch", [0]), ("batch", [1])], torch_got
    assert [g[:2] for g in mp_got[:2]] == [("batch", [0]), ("batch", [1])], mp_got
    assert torch_got[2][0] == "error" and type(torch_got[2][1]) is RuntimeError, torch_got
    assert mp_got[2][0] == "error", mp_got
    assert isinstance(mp_got[2][1], RuntimeError), repr(mp_got[2][1])
    assert isinstance(mp_got[2][1], mploader_module().Timeout), repr(mp_got[2][1])
    assert torch_got[2][2] < 0.8 and mp_got[2][2] < 0.8, (torch_got, mp_got)


@pytest.mark.parametrize("prefetch_factor", [1, 4])
def test_a_timeout_that_is_not_reached_changes_nothing(prefetch_factor):
    assert_same_epochs(pds.PairDataset(12), batch_size=3, num_workers=2, timeout=5,
                       prefetch_factor=prefetch_factor)


# ----------------------------------------------------------------------------------------------
# get_worker_info, worker_init_fn, worker seeds, persistent workers
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("num_workers", WORKERS)
def test_get_worker_info_in_getitem(num_workers):
    dataset = pds.WorkerInfoDataset(16)
    results = {}
    for kind in KINDS:
        loader = make_loader(kind, dataset, batch_size=2, num_workers=num_workers,
                             worker_init_fn=pds.mark_dataset if num_workers else None)
        results[kind] = list(loader)
        del loader
    # The worker ids and seeds may differ (which worker reads which batch depends on which is
    # free first, and how seeds are made), and so the id worker_init_fn marked; all the rest is
    # the same. init_worker is checked against id below.
    varies = ("id", "seed", "init_worker")
    strip = [{k: v for k, v in b.items() if k not in varies} for b in results["torch"]]
    got = [{k: v for k, v in b.items() if k not in varies} for b in results["mploader"]]
    assert_same_batches(strip, got)
    for kind in KINDS:
        for batch in results[kind]:
            if num_workers:
                assert batch["has_info"].all(), kind
                assert batch["num_workers"].eq(num_workers).all(), kind
                assert set(batch["id"].tolist()) <= set(range(num_workers)), kind
                assert torch.equal(batch["init_worker"], batch["id"]), kind
                assert batch["dataset_is_self"].all() and batch["torch_seeded"].all(), kind
                assert all(s.isdigit() for s in batch["seed"]), kind
            else:
                assert not batch["has_info"].any(), kind
    assert dataset.init_worker == -1  # the main process's dataset is not the workers' copy


@pytest.mark.parametrize("num_workers,persistent_workers", [(0, False), (2, False), (2, True)])
def test_each_sample_is_read_once_per_epoch(tmp_path, num_workers, persistent_workers):
    # torch calls __getitem__ once per index the sampler gives, in the main process
    # (num_workers=0) or in the workers; reads have side effects and costs.
    reads = {}
    for kind in KINDS:
        path = str(tmp_path / f"{kind}.log")
        loader = make_loader(kind, pds.ReadLogDataset(path, 10), batch_size=3, shuffle=True,
                             num_workers=num_workers, persistent_workers=persistent_workers)
        torch.manual_seed(43)
        for _ in range(2):
            assert len(list(loader)) == 4
        del loader
        gc.collect()
        reads[kind] = pds.read_log(path)
    assert sorted(i for i, _ in reads["torch"]) == sorted(list(range(10)) * 2)
    if num_workers:
        # mploader reads sample 0 once more, in the short-lived process that sizes the shared
        # memory before the first epoch's workers start (docs/python.md), and in no worker.
        (index, sizer), *rest = reads["mploader"]
        assert index == 0 and sizer not in {pid for _, pid in rest}
        reads["mploader"] = rest
    assert sorted(i for i, _ in reads["mploader"]) == sorted(i for i, _ in reads["torch"]), (
        f"indices read: torch {sorted(i for i, _ in reads['torch'])}, mploader "
        f"{sorted(i for i, _ in reads['mploader'])}")
    for kind in KINDS:
        pids = {pid for _, pid in reads[kind]}
        if num_workers == 0:
            assert pids == {os.getpid()}, (kind, pids)
        else:
            assert os.getpid() not in pids, (kind, pids)
            expected = num_workers if persistent_workers else 2 * num_workers
            assert len(pids) <= expected, (kind, pids)


@pytest.mark.parametrize("persistent_workers", [False, True])
def test_worker_init_fn_runs_once_in_every_worker(tmp_path, persistent_workers):
    starts = {}
    for kind in KINDS:
        folder = tmp_path / kind
        folder.mkdir()
        loader = make_loader(kind, pds.IndexDataset(12), batch_size=2, num_workers=2,
                             persistent_workers=persistent_workers,
                             worker_init_fn=functools.partial(pds.record_worker_start,
                                                              str(folder)))
        torch.manual_seed(31)
        for _ in range(3):
            assert len(list(loader)) == 6
        del loader
        gc.collect()
        starts[kind] = pds.read_worker_starts(str(folder))
    calls = {kind: {w: len(rows) for w, rows in s.items()} for kind, s in starts.items()}
    assert calls["torch"] == ({0: 1, 1: 1} if persistent_workers else {0: 3, 1: 3})
    # mploader also runs it once, as worker 0, in the short-lived process that reads sample 0
    # to size the shared memory before the first workers start (docs/python.md).
    sizing = starts["mploader"][0].pop(0)
    assert sizing["pid"] not in {r["pid"] for rows in starts["mploader"].values() for r in rows}
    calls["mploader"][0] -= 1
    assert calls["mploader"] == calls["torch"]
    for kind in KINDS:
        rows = starts[kind]
        for worker_id, calls_of_worker in rows.items():
            for row in calls_of_worker:
                assert row["has_info"] and row["id"] == worker_id, (kind, row)
                assert row["num_workers"] == 2, (kind, row)
                assert row["initial_seed"] == row["seed"], (kind, row)  # torch seeded with it
        for epoch in range(len(rows[0])):
            a, b = rows[0][epoch], rows[1][epoch]
            # torch's test_worker_seed: each worker its own seed and its own random streams.
            assert a["seed"] != b["seed"], (kind, a, b)
            assert a["torch_draw"] != b["torch_draw"], (kind, a, b)
            assert a["np_draw"] != b["np_draw"], (kind, a, b)
        if not persistent_workers:
            assert len({r["seed"] for r in rows[0]}) == 3, (kind, rows[0])  # new each epoch
            assert len({r["pid"] for r in rows[0]}) == 3, (kind, rows[0])  # new processes


def test_worker_seeds_follow_torch_manual_seed(tmp_path):
    # torch's test_worker_seed_reproducibility: the same torch.manual_seed before building and
    # iterating a loader gives its workers the same seeds; another seed, other seeds.
    for kind in KINDS:
        seen = []
        for run, seed in enumerate([41, 41, 42]):
            folder = tmp_path / f"{kind}{run}"
            folder.mkdir()
            torch.manual_seed(seed)
            loader = make_loader(kind, pds.IndexDataset(8), batch_size=2, num_workers=2,
                                 worker_init_fn=functools.partial(pds.record_worker_start,
                                                                  str(folder)))
            list(loader)
            del loader
            gc.collect()
            starts = pds.read_worker_starts(str(folder))
            seen.append({w: (rows[0]["seed"], rows[0]["torch_draw"], rows[0]["np_draw"])
                         for w, rows in starts.items()})
        assert seen[0] == seen[1], kind
        assert seen[0][0] != seen[2][0] and seen[0][1] != seen[2][1], kind
