"""A warning, before any worker starts, for a dataset attribute that holds a large container of
Python objects: each worker that reads its entries writes their reference counts and so copies
their pages (or, under spawn, unpickles a copy of its own before its first batch)."""
import itertools
import sys
import warnings

from ._shared import SharedDict, SharedList

WARN_BYTES = 64 << 20  # an estimate over this is worth a warning
_SAMPLED = 64  # entries looked at per container: milliseconds, whatever its length
_CONTAINERS = (dict, list, tuple, set, frozenset)


def _deep_size(obj, depth=2):
    """Bytes of ``obj`` and of what it holds, two levels down (a tuple of a str and an int)."""
    size = sys.getsizeof(obj)
    if depth and isinstance(obj, (tuple, list, set, frozenset)):
        size += sum(_deep_size(item, depth - 1) for item in obj)
    elif depth and isinstance(obj, dict):
        size += sum(_deep_size(k, depth - 1) + _deep_size(v, depth - 1) for k, v in obj.items())
    return size


def estimated_bytes(container):
    """The container's own bytes and its entries', estimated from its first _SAMPLED entries."""
    if not container:
        return sys.getsizeof(container)
    if isinstance(container, dict):
        sample = list(itertools.islice(container.items(), _SAMPLED))
    else:
        sample = list(itertools.islice(container, _SAMPLED))
    per_entry = sum(_deep_size(entry) for entry in sample) / len(sample)
    if isinstance(container, dict):
        per_entry -= sys.getsizeof(sample[0])  # the (key, value) pair is not stored
    return sys.getsizeof(container) + int(per_entry * len(container))


def _remedy(name, container):
    shared = "SharedDict" if isinstance(container, dict) else "SharedList"
    return (f"self.{name} = mploader.{shared}(self.{name})" if not isinstance(container, set)
            else f"self.{name} = mploader.SharedList(sorted(self.{name}))")


def warn_of_large_containers(dataset, workers, start_method):
    """Warns once per attribute of ``dataset`` (one level deep) that holds more than
    WARN_BYTES of Python objects, naming it, what it will cost and the remedy."""
    for name, value in list(getattr(dataset, "__dict__", {}).items()):
        if not isinstance(value, _CONTAINERS) or isinstance(value, (SharedDict, SharedList)):
            continue
        size = estimated_bytes(value)
        if size <= WARN_BYTES:
            continue
        mib = size / (1 << 20)
        how = ("each copies the entries it reads, as it reads them (reading a Python object "
               "writes its reference count, so its page is copied)" if start_method == "fork"
               else "each unpickles a copy of its own before its first batch")
        cost = (f"the {workers} workers may hold up to {workers} copies of it "
                f"({workers * mib:,.0f} MiB)" if isinstance(workers, int)
                else "each worker may hold a copy of it")
        warnings.warn(
            f"mploader: DataLoader: dataset.{name} is a {type(value).__name__} of "
            f"{len(value):,} Python objects, about {mib:,.0f} MiB: {cost}, since {how}. "
            "Keep it in shared memory instead: "
            f"{_remedy(name, value)}, or a NumPy or Arrow array (docs/python.md, Large Python "
            "containers).", UserWarning, stacklevel=3)
