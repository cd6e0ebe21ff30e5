"""Datasets, samplers, exceptions and worker_init_fns for test_torch_parity.py.

They live at module level (importable as ``parity_datasets``) so that forked workers and the
main process agree on them, and so that an exception raised in a worker names a type the main
process can import again.
"""
import os
import time

import numpy as np
import torch
from torch.utils.data import Dataset, Sampler, get_worker_info


# ----------------------------------------------------------------------------------------------
# Exceptions
# ----------------------------------------------------------------------------------------------

class ParityError(Exception):
    """A dataset's own exception type, built from one message string."""


class ParityValueError(ValueError):
    """A subclass of a builtin exception, built from one message string."""


class TwoArgumentError(Exception):
    """An exception that cannot be built from one message string."""

    def __init__(self, code, detail):
        super().__init__(f"code {code}: {detail}")
        self.code = code
        self.detail = detail


# ----------------------------------------------------------------------------------------------
# Datasets giving values
# ----------------------------------------------------------------------------------------------

class PairDataset(Dataset):
    """(data[i], label[i]) from fixed tensors: the TensorDataset of torch's tests."""

    def __init__(self, n=24):
        gen = torch.Generator().manual_seed(1234)
        self.data = torch.randn(n, 2, 3, generator=gen)
        self.labels = torch.randperm(n, generator=gen)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.data[i], self.labels[i]


class IndexDataset(Dataset):
    """The index itself, as a Python int (collated into an int64 tensor)."""

    def __init__(self, n=20):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i


def _tensor_of(dtype, i):
    base = torch.arange(6).reshape(2, 3) + i
    if dtype == torch.bool:
        return (base % 2) == 0
    if dtype.is_complex:
        return torch.complex(base.float(), -base.float()).to(dtype)
    return base.to(dtype)


class TensorDtypeDataset(Dataset):
    """A (2, 3) tensor of one dtype, its values depending on the index."""

    def __init__(self, dtype, n=10):
        self.dtype = dtype
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return _tensor_of(self.dtype, i)


class ShapedTensorDataset(Dataset):
    """Tensors of odd shapes and layouts: 0-d, empty, non-contiguous, 4-d."""

    def __init__(self, n=9):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {
            "scalar": torch.tensor(float(i) / 4),
            "empty": torch.zeros(0, 3),
            "transposed": (torch.arange(12, dtype=torch.float32).reshape(3, 4) * i).t(),
            "strided": torch.arange(40, dtype=torch.int32)[i % 3::3][:8],
            "four_d": torch.full((1, 2, 2, 3), i, dtype=torch.int16),
        }


class NumpyDataset(Dataset):
    """Numpy arrays of several dtypes and layouts, and a 0-d array."""

    def __init__(self, n=11):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        grid = np.arange(12).reshape(3, 4) + i
        return {
            "f64": grid.astype(np.float64) / 3,
            "f32": grid.astype(np.float32) * 0.5,
            "i32": grid.astype(np.int32) - 7,
            "u8": grid.astype(np.uint8),
            "b": grid % 3 == 0,
            "i64_sliced": grid.astype(np.int64)[:, ::2],
            "zero_d": np.array(i * 1.25, dtype=np.float32),
        }


class PythonScalarDataset(Dataset):
    """Python int, float and bool, and numpy scalars of several types."""

    def __init__(self, n=13):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {
            "int": i * 3 - 20,
            "big_int": 2 ** 40 + i,
            "float": i / 7.0,
            "bool": i % 3 == 1,
            "np_float32": np.float32(i) / np.float32(3),
            "np_float64": np.float64(i) * 0.1,
            "np_int16": np.int16(-i),
            "np_int64": np.int64(i) * 1000,
            "np_uint8": np.uint8(i + 200),
            "np_bool": np.bool_(i % 2),
        }


class TextDataset(Dataset):
    """str and bytes at the top of a dict, non-ASCII text and empty strings included."""

    WORDS = ["alpha", "", "größe", "日本語", "a/b|c%d", "x" * 40, "tab\tnew\nline"]

    def __init__(self, n=14):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        word = self.WORDS[i % len(self.WORDS)]
        return {
            "text": word,
            "raw": word.encode("utf-8") + bytes([i, 0, 255]),
            "index": i,
        }


class TopLevelStrDataset(Dataset):
    """The sample is a str itself."""

    def __init__(self, n=7):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return f"sample-{i}-" + "é" * i


class TopLevelBytesDataset(Dataset):
    """The sample is bytes itself."""

    def __init__(self, n=7):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return bytes(range(i, 2 * i + 1))


class TextInSequenceDataset(Dataset):
    """str and bytes inside a tuple and a list (default_collate gives tuples of them there)."""

    def __init__(self, n=8):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return (f"name{i}", torch.tensor(i), [f"tag{i}", bytes([i])])


class NestedDataset(Dataset):
    """Dicts (key order not sorted, str and int keys), tuples and lists, four levels deep."""

    def __init__(self, n=10):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {
            "zeta": torch.full((2,), i, dtype=torch.float32),
            "alpha": (i, [float(i) / 2, {"deep": np.arange(3) * i, "name": f"n{i}"}]),
            "mid": {
                "b": [torch.tensor([i, -i]), (i % 2 == 0, np.float32(i))],
                "a": {"c": {"d": torch.ones(1, 2) * i}},
            },
            7: "seven",
            3: np.int32(i),
            "odd/key|with%marks": torch.tensor(i * 10),
        }


class TupleDataset(Dataset):
    """A plain tuple of leaves and a list of lists."""

    def __init__(self, n=9):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return (torch.tensor([i, i + 1]), i * 0.5, [[i, i + 1], [torch.tensor(float(i))]])


class MismatchedShapeDataset(Dataset):
    """Sample 3's tensor has another shape: the batch cannot be stacked."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return torch.zeros(3 if i == 3 else 2)


class MismatchedListDataset(Dataset):
    """Sample 5's list is longer: the batch's lists are not of equal size."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return [i] * (3 if i == 5 else 2)


class BadLeafDataset(Dataset):
    """Samples that default_collate refuses with a TypeError."""

    KINDS = {
        "none": lambda i: None,
        "object": lambda i: object(),
        "set": lambda i: {i},
        "np_str": lambda i: np.array(["a", "b"]),
        "np_object": lambda i: np.array([1, "x"], dtype=object),
    }

    def __init__(self, kind):
        self.kind = kind

    def __len__(self):
        return 6

    def __getitem__(self, i):
        return BadLeafDataset.KINDS[self.kind](i)


# ----------------------------------------------------------------------------------------------
# Datasets that raise
# ----------------------------------------------------------------------------------------------

class NoGetitemDataset(Dataset):
    """Only __len__: torch's Dataset.__getitem__ raises NotImplementedError (torch's
    ErrorDataset)."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n


class RaisingDataset(Dataset):
    """Raises ``kind`` for the indices in ``bad``; the index otherwise."""

    def __init__(self, kind, bad, n=16):
        self.kind = kind
        self.bad = set(bad)
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i in self.bad:
            if self.kind == "ParityError":
                raise ParityError(f"parity sample {i} is bad")
            if self.kind == "ParityValueError":
                raise ParityValueError(f"parity sample {i} has a bad value")
            if self.kind == "KeyError":
                raise KeyError(f"parity key {i}")
            if self.kind == "IndexError":
                raise IndexError(f"parity index {i} out of range")
            if self.kind == "TwoArgumentError":
                raise TwoArgumentError(i, f"parity sample {i} needs two arguments")
            if self.kind == "ZeroDivisionError":
                return 1 // (i - i)
            raise AssertionError(self.kind)
        return torch.tensor([i, i * i])


class SleepyDataset(Dataset):
    """Index ``slow`` takes ``seconds``; the others are immediate."""

    def __init__(self, slow=0, seconds=1.5, n=6):
        self.slow = slow
        self.seconds = seconds
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.slow:
            time.sleep(self.seconds)
        return torch.tensor(i)


# ----------------------------------------------------------------------------------------------
# get_worker_info and worker_init_fn
# ----------------------------------------------------------------------------------------------

class WorkerInfoDataset(Dataset):
    """What get_worker_info() says inside __getitem__, as a dict.

    ``init_worker`` is set on the worker's own copy by ``mark_dataset``."""

    def __init__(self, n=16):
        self.n = n
        self.init_worker = -1

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        info = get_worker_info()
        if info is None:
            return {"index": i, "has_info": False, "id": -1, "num_workers": 0,
                    "seed_is_int": False, "dataset_is_self": False, "init_worker": -1,
                    "torch_seeded": False, "seed": ""}
        return {
            "index": i,
            "has_info": True,
            "id": info.id,
            "num_workers": info.num_workers,
            "seed_is_int": isinstance(info.seed, int) and not isinstance(info.seed, bool),
            "dataset_is_self": info.dataset is self,
            "init_worker": self.init_worker,
            "torch_seeded": torch.initial_seed() == info.seed,
            "seed": str(info.seed),
        }


def mark_dataset(worker_id):
    """worker_init_fn: marks the worker's copy of the dataset with its id."""
    info = get_worker_info()
    info.dataset.init_worker = worker_id


def record_worker_start(directory, worker_id):
    """worker_init_fn (through functools.partial): appends one line per call to
    ``directory/<worker_id>``: what get_worker_info() says and what the worker's generators
    give first."""
    info = get_worker_info()
    line = " ".join(str(x) for x in [
        info is not None,
        -1 if info is None else info.id,
        -1 if info is None else info.num_workers,
        "" if info is None else info.seed,
        torch.initial_seed(),
        torch.randint(0, 2 ** 62, ()).item(),
        int(np.random.randint(0, 2 ** 31)),
        os.getpid(),
    ])
    with open(os.path.join(directory, str(worker_id)), "a") as f:
        f.write(line + "\n")


def read_worker_starts(directory):
    """{worker_id: [dict per worker_init_fn call]} from record_worker_start's files."""
    out = {}
    for name in sorted(os.listdir(directory)):
        rows = []
        with open(os.path.join(directory, name)) as f:
            for line in f.read().splitlines():
                has, wid, nw, seed, initial, torch_draw, np_draw, pid = line.split(" ")
                rows.append({"has_info": has == "True", "id": int(wid), "num_workers": int(nw),
                             "seed": int(seed), "initial_seed": int(initial),
                             "torch_draw": int(torch_draw), "np_draw": int(np_draw),
                             "pid": int(pid)})
        out[int(name)] = rows
    return out


# ----------------------------------------------------------------------------------------------
# Samplers
# ----------------------------------------------------------------------------------------------

class NoLenSampler(Sampler):
    """Indices from the end to the start, every other one; no __len__."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n - 1, -1, -2))


class RandomChunkBatchSampler(Sampler):
    """Batches of sizes 1, 2, 3, 1, 2, 3, ... over a permutation drawn from torch's global
    generator each epoch."""

    def __init__(self, n):
        self.n = n

    def _sizes(self):
        sizes, left, k = [], self.n, 0
        while left > 0:
            size = min(left, k % 3 + 1)
            sizes.append(size)
            left -= size
            k += 1
        return sizes

    def __iter__(self):
        order = torch.randperm(self.n).tolist()
        start = 0
        for size in self._sizes():
            yield order[start:start + size]
            start += size

    def __len__(self):
        return len(self._sizes())


class ReadLogDataset(Dataset):
    """The index, and a line "<index> <pid>" appended to ``path`` for each read."""

    def __init__(self, path, n=10):
        self.path = path
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        with open(self.path, "a") as f:
            f.write(f"{i} {os.getpid()}\n")
        return i


def read_log(path):
    """[(index, pid)] from ReadLogDataset's file, in the order written."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [tuple(int(x) for x in line.split()) for line in f.read().splitlines()]


def describe_one(sample):
    """A collate_fn for batch_size=None: gets one (data, label) sample, not a list."""
    data, label = sample
    return {"sum": float(data.sum()), "label": int(label), "shape": tuple(data.shape)}


class GetItemsDataset(PairDataset):
    """PairDataset with __getitems__, which torch's fetcher calls once per batch: it logs each
    call's indices to ``log`` (a file), so that a test sees one call per batch."""

    def __init__(self, n, log):
        super().__init__(n)
        self.log = log

    def __getitems__(self, indices):
        with open(self.log, "a") as f:
            f.write(" ".join(map(str, indices)) + "\n")
        return [(self.data[i] * 2, self.labels[i]) for i in indices]
