"""SharedList and SharedDict: a list or dict of Python values built once into sealed shared
memory, read by every worker without copying it.

A worker that reads an entry of an ordinary list or dict it inherited writes the entry's
reference count, and the kernel copies the page: after an epoch each worker holds its own copy
of most of the container. These keep their entries as bytes that nobody writes; reading one
decodes a fresh object from them (python/src/shared_table.cc)."""
import collections.abc
import multiprocessing.reduction
import os

from . import _C

__all__ = ["SharedDict", "SharedList"]

# While a spawned worker's payload is pickled (_spawning.payload_file), the descriptors of the
# containers it holds, in order; the engine hands them to each worker, which finds them in
# _attached_fds while it unpickles. A container pickled at any other time carries its bytes.
_collected_fds = None
_attached_fds = None


def _read_only(self, *args, **kwargs):
    raise TypeError(
        f"mploader: {type(self).__name__} is shared memory that every worker reads, so it "
        f"cannot be changed. Build a new one from a changed copy (for example "
        f"{'dict' if isinstance(self, SharedDict) else 'list'}(shared)), or keep data that "
        "changes in an ordinary container.")


def _reduce(self):
    if _collected_fds is not None:
        fd = self.fileno()
        if fd >= 0:
            _collected_fds.append(fd)
            return _attach, (type(self), len(_collected_fds) - 1)
    return _from_bytes, (type(self), self._region_bytes())


def _from_bytes(cls, region):
    return _C.SharedTable.__new__(cls, "bytes", cls._kind, region)


def _attach(cls, index):
    if _attached_fds is None or index >= len(_attached_fds):
        raise RuntimeError(
            f"mploader: {cls.__name__} was pickled for an mploader worker, which is handed its "
            "shared memory, and is unpickled elsewhere. Pickle it outside a DataLoader's "
            "start-up to carry its entries.")
    return _C.SharedTable.__new__(cls, "fd", cls._kind, _attached_fds[index])


def _from_dup_fd(cls, dup_fd):
    fd = dup_fd.detach()
    try:
        return _C.SharedTable.__new__(cls, "fd", cls._kind, fd)
    finally:
        os.close(fd)


def _reduce_for_multiprocessing(obj):
    """multiprocessing (torch's DataLoader under spawn, a Queue) hands over the descriptor."""
    fd = obj.fileno()
    if fd < 0:
        return _reduce(obj)
    return _from_dup_fd, (type(obj), multiprocessing.reduction.DupFd(fd))


def _describe(self):
    return (f"{type(self).__name__}(<{len(self):,} entries in {self.nbytes / (1 << 20):.1f} MiB "
            "of shared memory>)")


class _ItemsView(collections.abc.ItemsView):
    __slots__ = ()

    def __iter__(self):
        return self._mapping._iter_items()


class _ValuesView(collections.abc.ValuesView):
    __slots__ = ()

    def __iter__(self):
        return self._mapping._iter_values()


class SharedDict(_C.SharedTable, collections.abc.Mapping):
    """A read-only dict in shared memory: ``SharedDict(mapping)``, or of (key, value) pairs.

    Keys are str, bytes or int. Values come back as equal objects: str, bytes, int, float,
    bool, None and tuples, lists and dicts of them are decoded directly; anything else is
    pickled per entry. Each read builds a new object: changing it changes nothing shared.
    Forked workers share its pages; spawned ones are handed its memory, not a copy."""

    __slots__ = ()
    _kind = "dict"

    def __new__(cls, mapping=(), /):
        if not isinstance(mapping, collections.abc.Mapping):
            mapping = dict(mapping)
        return super().__new__(cls, "build", "dict", mapping)

    def items(self):
        return _ItemsView(self)

    def values(self):
        return _ValuesView(self)

    def __eq__(self, other):
        if not isinstance(other, collections.abc.Mapping):
            return NotImplemented
        if len(self) != len(other):
            return False
        missing = object()
        return all(other.get(key, missing) == value for key, value in self._iter_items())

    __hash__ = None
    __repr__ = _describe
    __reduce__ = _reduce
    __setitem__ = __delitem__ = __ior__ = _read_only
    update = pop = popitem = clear = setdefault = _read_only


class SharedList(_C.SharedTable, collections.abc.Sequence):
    """A read-only list in shared memory: ``SharedList(iterable)``. Values as for SharedDict;
    indices may be negative, and a slice is an ordinary list."""

    __slots__ = ()
    _kind = "list"

    def __new__(cls, iterable=(), /):
        return super().__new__(cls, "build", "list", iterable)

    def __eq__(self, other):
        if not isinstance(other, (list, SharedList)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    __hash__ = None
    __repr__ = _describe
    __reduce__ = _reduce
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _read_only
    append = extend = insert = pop = remove = clear = sort = reverse = _read_only


multiprocessing.reduction.ForkingPickler.register(SharedDict, _reduce_for_multiprocessing)
multiprocessing.reduction.ForkingPickler.register(SharedList, _reduce_for_multiprocessing)
