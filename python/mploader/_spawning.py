"""start_method spawn and forkserver for a Python dataset: the dataset, pickled in the main
process (as torch's DataLoader pickles it for each worker), and what multiprocessing's spawn
records to import the user's main module in a fresh interpreter. A fresh worker runs
``python -c "import mploader._spawned"``; the engine then calls rebuild_dataset() and
rebuild_collate() (python/src/spawned.cc) with these payloads."""
import fcntl
import multiprocessing.spawn
import os
import pickle
import struct
import sys

from . import _shared
from ._errors import OptionError
from ._iterable import INDICES, IterableFetch
from ._worker import DeferredFetch, SampleFetch, collator, raw_fetcher, starter

SPAWNED_COMMAND = [sys.executable, "-c", "import mploader._spawned"]
_prepared = False


def _first_unpicklable(obj):
    """The name of the first attribute of ``obj`` that cannot be pickled, or None."""
    for name, value in getattr(obj, "__dict__", {}).items():
        try:
            pickle.dumps(value)
        except Exception:  # noqa: BLE001  (whatever pickling raises names the culprit)
            return name
    return None


def _pickled(obj, what, start_method):
    try:
        return pickle.dumps(obj)
    except Exception as error:  # noqa: BLE001
        attribute = _first_unpicklable(obj)
        where = f"{type(obj).__name__}.{attribute}" if attribute else type(obj).__name__
        raise OptionError(
            f"mploader: DataLoader: start_method {start_method!r} pickles the {what} for each "
            f"worker, and {where} cannot be pickled ({type(error).__name__}: {error}). Open it "
            "in the worker instead (on first use in __getitem__, or in worker_init_fn), or use "
            "start_method='fork'.", what) from None


_LENGTH = struct.Struct("<Q")
_SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SEAL


def _preparation():
    """What multiprocessing's spawn records to import the user's main module, pickled."""
    preparation = multiprocessing.spawn.get_preparation_data("mploader-worker")
    preparation.pop("authkey", None)  # multiprocessing's own secret: no use to a worker
    return pickle.dumps(preparation)


def _checked(obj, what, start_method, parts):
    """Raises the OptionError naming what in ``obj`` (or ``parts``) cannot be pickled."""
    for name, part in parts:
        _pickled(part, name, start_method)
    _pickled(obj, what, start_method)


def payload(obj, what, start_method, parts=()):
    """``obj`` pickled, after what a fresh interpreter needs to unpickle it (multiprocessing's
    preparation data, pickled on its own), as bytes: the preparation's length, the
    preparation, the object. For what is small (a collate_fn). ``parts``: (name, object)
    pairs of what ``obj`` holds, checked first (only when ``obj`` cannot be pickled) so that an
    error names the one that cannot be."""
    try:
        pickled = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001  (what failed is named below)
        _checked(obj, what, start_method, parts)
        raise
    prepared = _preparation()
    return b"".join((_LENGTH.pack(len(prepared)), prepared, pickled))


def payload_file(obj, what, start_method, parts=()):
    """The same payload as payload(), pickled straight into sealed shared memory (a memfd),
    returned as its open file, with the descriptors of the SharedDict and SharedList objects it
    holds: a dataset's pickle can be as large as the dataset, and is then never held in this
    process's own memory. The engine maps that memory into every spawned worker, which
    unpickles it where it lies, and hands the containers' memory over beside it."""
    prepared = _preparation()
    fd = os.memfd_create("mploader-dataset-recipe", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    file = open(fd, "w+b")
    _shared._collected_fds = collected = []
    try:
        file.write(_LENGTH.pack(len(prepared)))
        file.write(prepared)
        try:
            pickle.dump(obj, file, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001  (what failed is named below)
            _checked(obj, what, start_method, parts)
            raise
        file.flush()
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, _SEALS)
    except BaseException:
        file.close()
        raise
    finally:
        _shared._collected_fds = None
    return file, collected


# What a spawned worker says when the user's main module, imported to rebuild the dataset,
# starts a DataLoader's workers itself (multiprocessing refuses the same with its own words).
MAIN_GUARD = (
    "mploader: DataLoader: a spawned worker imports your main module to rebuild the dataset, "
    "and that module started a DataLoader's workers while it was imported: the code that runs "
    "the DataLoader is not under `if __name__ == \"__main__\":`. With start_method 'spawn' or "
    "'forkserver', as with multiprocessing, guard it:\n\n    if __name__ == \"__main__\":\n"
    "        main()\n")
_preparing_main = False


def preparing_main():
    """Whether this process is a spawned worker importing the user's main module."""
    return _preparing_main


def _unpickled(data, descriptors=()):
    """The object of a payload (bytes, or a memoryview of the engine's copy: not copied), its
    shared containers mapped from ``descriptors``."""
    global _prepared, _preparing_main
    data = memoryview(data)
    (length,) = _LENGTH.unpack_from(data)
    if not _prepared:  # sys.path, the working folder and the main module, as the parent had
        _preparing_main = True
        try:
            multiprocessing.spawn.prepare(pickle.loads(data[_LENGTH.size:_LENGTH.size + length]))
        finally:
            _preparing_main = False
        _prepared = True
    _shared._attached_fds = list(descriptors)
    try:
        return pickle.loads(data[_LENGTH.size + length:])
    finally:
        _shared._attached_fds = None


def rebuild_dataset(data, descriptors=()):
    """(fetch, size, whether a collate_fn takes the samples, worker start) in a fresh worker."""
    made = _unpickled(data, descriptors)
    dataset, raw = made["dataset"], made["raw"]
    if made.get("iterable") is not None:
        fetch, size = IterableFetch(dataset, *made["iterable"]), INDICES
    elif made.get("getitems"):
        fetch, size = DeferredFetch(), len(dataset)
    else:
        fetch, size = (raw_fetcher(dataset) if raw else SampleFetch(dataset)), len(dataset)
    return fetch, size, raw, starter(dataset, made["worker_init_fn"])


def rebuild_collate(data):
    return collator(_unpickled(data))
