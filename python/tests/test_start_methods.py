"""Spawn and forkserver: a Python dataset is pickled for each fresh worker, as torch's
DataLoader does, and everything the forked workers do works there too: torch's order, the
dataset's exceptions with their types, crashes explained, restarts that run Python again,
get_worker_info, worker_init_fn, collate_fn, resume, and the C++ readers."""
import os
import signal

import pytest
import torch

import mploader
import parity_datasets as pds
from parity import assert_same_batches

METHODS = ["spawn", "forkserver"]


class Numbers(torch.utils.data.Dataset):
    def __len__(self):
        return 24

    def __getitem__(self, i):
        info = torch.utils.data.get_worker_info()
        return {"i": i, "pid": os.getpid(), "worker": info.id, "seed": info.seed % 1000}


class CrashesAt(Numbers):
    def __init__(self, bad, mode):
        self.bad, self.mode = bad, mode

    def __getitem__(self, i):
        if i == self.bad:
            if self.mode == "segfault":
                import ctypes
                ctypes.string_at(0)
            raise pds.ParityValueError(f"sample {i} is bad")
        return super().__getitem__(i)


class Unpicklable(Numbers):
    def __init__(self):
        self.log = open(os.devnull, "w")


def indices(batches):
    return sum((b["i"].tolist() for b in batches), [])


def mark_start(worker_id):
    torch.utils.data.get_worker_info().dataset.started = worker_id


class StartedDataset(Numbers):
    started = None

    def __getitem__(self, i):
        return {"i": i, "started": -1 if self.started is None else self.started}


def first_items(samples):
    return torch.tensor([s["i"] for s in samples]), [str(s["i"]) for s in samples]


@pytest.mark.parametrize("method", METHODS)
def test_the_same_batches_as_torch_in_the_same_order(method):
    torch.manual_seed(9)
    expected = list(torch.utils.data.DataLoader(pds.PairDataset(20), batch_size=3,
                                                shuffle=True))
    torch.manual_seed(9)
    got = list(mploader.DataLoader(pds.PairDataset(20), batch_size=3, shuffle=True,
                                   num_workers=2, start_method=method))
    assert_same_batches(expected, got, method)


@pytest.mark.parametrize("method", METHODS)
def test_worker_info_and_worker_init_fn_in_fresh_workers(method):
    batches = list(mploader.DataLoader(StartedDataset(), batch_size=4, num_workers=2,
                                       start_method=method, worker_init_fn=mark_start))
    assert sorted(indices(batches)) == list(range(24))
    assert set(sum((b["started"].tolist() for b in batches), [])) == {0, 1}
    loader = mploader.DataLoader(Numbers(), batch_size=4, num_workers=2,
                                 multiprocessing_context=method)
    batches = list(loader)
    assert set(sum((b["worker"].tolist() for b in batches), [])) == {0, 1}
    assert os.getpid() not in set(sum((b["pid"].tolist() for b in batches), []))


@pytest.mark.parametrize("method", METHODS)
def test_an_exception_keeps_its_type_and_a_segfault_is_explained(method, tmp_path):
    loader = mploader.DataLoader(CrashesAt(5, "raise"), batch_size=4, num_workers=2,
                                 start_method=method)
    with pytest.raises(pds.ParityValueError, match="sample 5 is bad"):
        list(loader)
    loader = mploader.DataLoader(CrashesAt(5, "segfault"), batch_size=4, num_workers=2,
                                 start_method=method, crash_dir=str(tmp_path))
    with pytest.raises(mploader.WorkerCrashed) as caught:
        list(loader)
    assert caught.value.cause == "segfault" and 5 in caught.value.indices


@pytest.mark.parametrize("method", METHODS)
def test_a_killed_worker_is_replaced_by_one_that_runs_python(method, tmp_path):
    loader = mploader.DataLoader(Numbers(), batch_size=2, num_workers=2, start_method=method,
                                 max_restarts=1, crash_dir=str(tmp_path), prefetch_factor=1)
    it = iter(loader)
    first = [next(it)]
    before = set(loader.worker_pids())
    os.kill(sorted(before)[0], signal.SIGKILL)
    batches = first + list(it)
    assert sorted(indices(batches)) == list(range(24))
    pids = set(sum((b["pid"].tolist() for b in batches), []))
    assert pids - before, "no worker started after the kill read a sample"


@pytest.mark.parametrize("method", METHODS)
def test_collate_fn_and_resume_in_fresh_workers(method):
    loader = mploader.DataLoader(Numbers(), batch_size=5, num_workers=2, start_method=method,
                                 collate_fn=first_items)
    ids, names = next(iter(loader))
    assert ids.tolist() == [0, 1, 2, 3, 4] and names == ["0", "1", "2", "3", "4"]
    torch.manual_seed(2)
    first = mploader.DataLoader(Numbers(), batch_size=4, shuffle=True, num_workers=2,
                                start_method=method)
    it = iter(first)
    next(it)
    state = first.state_dict()
    rest = indices(list(it))
    second = mploader.DataLoader(Numbers(), batch_size=4, shuffle=True, num_workers=2,
                                 start_method=method)
    second.load_state_dict(state)
    assert indices(list(second)) == rest


def test_a_dataset_that_cannot_be_pickled_is_refused_at_construction():
    with pytest.raises(mploader.OptionError) as caught:
        mploader.DataLoader(Unpicklable(), num_workers=2, start_method="spawn")
    assert caught.value.option == "dataset"
    assert "Unpicklable.log cannot be pickled" in str(caught.value)
    assert "start_method='fork'" in str(caught.value)
    mploader.DataLoader(Unpicklable(), num_workers=2)  # fork pickles nothing


@pytest.mark.parametrize("method", METHODS)
def test_a_cpp_reader_in_fresh_workers(method, tmp_path):
    import numpy as np
    np.arange(3000, dtype=np.uint16).tofile(tmp_path / "tokens.bin")
    stream = mploader.TokenStream([tmp_path / "tokens.bin"], context=10)
    inputs = torch.cat([b["input"] for b in mploader.DataLoader(
        stream, batch_size=8, num_workers=2, start_method=method)])
    assert len({tuple(r.tolist()) for r in inputs}) == len(inputs) == len(stream)


class Large(torch.utils.data.Dataset):
    """A dataset holding 96 MiB, and in each sample the size of the largest mapping of its
    recipe's shared memory that the worker still holds (0: unmapped once the dataset was
    built)."""

    def __init__(self):
        self.blob = os.urandom(96 << 20)

    def __len__(self):
        return 8

    def __getitem__(self, i):
        with open("/proc/self/maps") as maps:
            held = [line for line in maps if "mploader-dataset-recipe" in line]
        return {"i": i, "size": len(self.blob), "recipe_maps": len(held)}


def _rss_kib(field):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/self/status")


@pytest.mark.parametrize("method", METHODS)
def test_a_large_dataset_is_pickled_into_shared_memory_that_workers_map(method):
    """Under spawn the pickled dataset never lies in the training process's own memory: it is
    pickled straight into sealed shared memory, which every worker maps, unpickles where it
    lies and unmaps. The training process's peak resident memory grows by far less than the
    dataset while its workers start."""
    data = Large()
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")  # VmHWM from here
    before = _rss_kib("VmRSS")
    loader = mploader.DataLoader(data, batch_size=4, num_workers=2,
                                 multiprocessing_context=method)
    batches = list(loader)
    grown_mib = (_rss_kib("VmHWM") - before) >> 10
    assert grown_mib < 48, f"the training process grew by {grown_mib} MiB for 96 MiB of data"
    assert torch.cat([b["i"] for b in batches]).tolist() == list(range(8))
    assert all(b["size"].tolist() == [96 << 20] * 4 for b in batches)
    assert all(b["recipe_maps"].tolist() == [0] * 4 for b in batches)
