"""SharedDict and SharedList in workers: forked workers read the parent's pages without
copying them, spawned ones are handed the memory, and the private memory a worker gains over
an epoch is measured (smaps_rollup) against a plain dict's."""
import gc
import os

import pytest
import torch

import mploader
from mploader import SharedDict, SharedList

WORKERS = 2


def private_dirty_kib():
    with open("/proc/self/smaps_rollup") as rollup:
        for line in rollup:
            if line.startswith("Private_Dirty:"):
                return int(line.split()[1])
    raise AssertionError("no Private_Dirty in smaps_rollup")


class Lookups(torch.utils.data.Dataset):
    """Sample i looks up a shuffled share of the table's keys, then says which worker read
    them and what private memory it holds now: each worker's last sample is its epoch's end.
    The keys are made from a tensor of numbers, so that no Python object but the table's is
    read (each read of one writes its page)."""

    def __init__(self, table, order, per_sample):
        self.table, self.order, self.per_sample = table, order, per_sample

    def __len__(self):
        return len(self.order) // self.per_sample

    def __getitem__(self, i):
        total = 0
        for k in self.order[i * self.per_sample:(i + 1) * self.per_sample].tolist():
            path, label = self.table.get(f"scan-{k:08d}", ("", 0))
            total += len(path) + label
        info = torch.utils.data.get_worker_info()
        return torch.tensor([info.id, private_dirty_kib(), total])


def entries(n):
    """The seed's shape: str -> (str, int), as a dataset of paths and labels holds."""
    return {f"scan-{i:08d}": (f"/data/scans/{i % 977:04d}/scan-{i:08d}.nii.gz", i % 10)
            for i in range(n)}


def worker_private_at_end(table, order, start_method):
    """The largest of the workers' Private_Dirty (KiB) at their last sample, over an epoch."""
    loader = mploader.DataLoader(Lookups(table, order, 2000), batch_size=None,
                                 num_workers=WORKERS, multiprocessing_context=start_method)
    last = {}
    for sample in loader:
        worker, private, _ = sample.tolist()
        last[worker] = private
    assert len(last) == WORKERS
    return max(last.values())


@pytest.mark.filterwarnings("ignore:mploader. DataLoader. dataset.table is a dict")  # meant
@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_workers_reading_a_shared_dict_gain_a_twentieth_of_a_plain_dicts_growth(start_method):
    n = 300_000
    order = torch.randperm(n, generator=torch.Generator().manual_seed(0))
    plain = entries(n)
    shared = SharedDict(plain)
    baseline = worker_private_at_end({}, order, start_method)  # the same reads, all missing
    with_plain = worker_private_at_end(plain, order, start_method) - baseline
    with_shared = worker_private_at_end(shared, order, start_method) - baseline
    print(f"{start_method}: a worker's private memory over a baseline: plain dict "
          f"{with_plain / 1024:.1f} MiB, SharedDict {with_shared / 1024:.1f} MiB")
    assert with_plain > 40 * 1024, "the plain dict did not grow the workers: nothing measured"
    assert with_shared <= 0.05 * with_plain


class Inode(torch.utils.data.Dataset):
    """Reports where the worker's SharedDict and SharedList lie: their memfd's inode."""

    def __init__(self, table, listed):
        self.table, self.listed = table, listed

    def __len__(self):
        return 4

    def __getitem__(self, i):
        assert self.table[f"k{i}"] == i and self.listed[i] == f"v{i}"
        return torch.tensor([os.fstat(self.table.fileno()).st_ino,
                             os.fstat(self.listed.fileno()).st_ino, len(os.listdir("/proc/self/fd"))])


@pytest.mark.parametrize("start_method", ["spawn", "forkserver"])
def test_spawned_workers_are_handed_the_same_memory_not_a_copy(start_method):
    table = SharedDict({f"k{i}": i for i in range(4)})
    listed = SharedList(f"v{i}" for i in range(4))
    loader = mploader.DataLoader(Inode(table, listed), batch_size=None, num_workers=2,
                                 multiprocessing_context=start_method)
    seen = [sample.tolist() for sample in loader]
    assert len(seen) == 4
    for table_inode, list_inode, _ in seen:
        assert table_inode == os.fstat(table.fileno()).st_ino
        assert list_inode == os.fstat(listed.fileno()).st_ino


def test_torchs_dataloader_under_spawn_hands_over_the_descriptor():
    table = SharedDict({f"k{i}": i for i in range(4)})
    listed = SharedList(f"v{i}" for i in range(4))
    loader = torch.utils.data.DataLoader(Inode(table, listed), batch_size=None, num_workers=1,
                                         multiprocessing_context="spawn")
    for table_inode, list_inode, _ in (sample.tolist() for sample in loader):
        assert table_inode == os.fstat(table.fileno()).st_ino
        assert list_inode == os.fstat(listed.fileno()).st_ino


class Frozen(torch.utils.data.Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        return torch.tensor([gc.get_freeze_count()])


def test_forked_workers_start_with_the_parents_objects_frozen():
    counts = [int(s) for s in mploader.DataLoader(Frozen(), batch_size=None, num_workers=1)]
    assert min(counts) > 1000  # everything the parent had, out of the collector's reach
    assert gc.get_freeze_count() == 0  # the parent's own collector goes on as before


class Holding(torch.utils.data.Dataset):
    def __init__(self, scans):
        self.scans = scans

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return torch.tensor([i])


def test_a_large_container_in_the_dataset_is_named_before_any_worker_starts():
    scans = entries(400_000)  # about 90 MiB of Python objects
    with pytest.warns(UserWarning) as caught:
        loader = mploader.DataLoader(Holding(scans), num_workers=2)
    text = str(caught[0].message)
    assert "dataset.scans is a dict of 400,000 Python objects, about" in text
    assert "the 2 workers may hold up to 2 copies of it (" in text
    assert "reading a Python object writes its reference count" in text
    assert "self.scans = mploader.SharedDict(self.scans)" in text
    assert loader._loader is None  # said at construction, before any worker exists


def test_small_or_shared_containers_and_no_workers_are_not_warned_of():
    import warnings as warnings_module
    with warnings_module.catch_warnings():
        warnings_module.simplefilter("error")
        mploader.DataLoader(Holding(entries(1000)), num_workers=2)
        mploader.DataLoader(Holding(SharedDict(entries(400_000))), num_workers=2)
        mploader.DataLoader(Holding(entries(400_000)), num_workers=0)
