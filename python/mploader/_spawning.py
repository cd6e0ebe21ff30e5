"""start_method spawn and forkserver for a Python dataset: the dataset, pickled in the main
process (as torch's DataLoader pickles it for each worker), and what multiprocessing's spawn
records to import the user's main module in a fresh interpreter. A fresh worker runs
``python -c "import mploader._spawned"``; the engine then calls rebuild_dataset() and
rebuild_collate() (python/src/spawned.cc) with these payloads."""
import base64
import multiprocessing.spawn
import pickle
import sys

from ._errors import OptionError
from ._iterable import INDICES, IterableFetch
from ._worker import DeferredFetch, collator, fetcher, raw_fetcher, starter

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


def payload(obj, what, start_method, parts=()):
    """``obj`` pickled, with what a fresh interpreter needs to unpickle it, as ASCII text.
    ``parts``: (name, object) pairs of what ``obj`` holds, each checked first so that an
    error names the one that cannot be pickled."""
    for name, part in parts:
        _pickled(part, name, start_method)
    preparation = multiprocessing.spawn.get_preparation_data("mploader-worker")
    preparation.pop("authkey", None)  # multiprocessing's own secret: no use to a worker
    outer = {"preparation": preparation, "object": _pickled(obj, what, start_method)}
    return base64.b64encode(pickle.dumps(outer)).decode("ascii")


def _unpickled(text):
    global _prepared
    outer = pickle.loads(base64.b64decode(text))
    if not _prepared:  # sys.path, the working folder and the main module, as the parent had
        multiprocessing.spawn.prepare(outer["preparation"])
        _prepared = True
    return pickle.loads(outer["object"])


def rebuild_dataset(text):
    """(fetch, size, whether a collate_fn takes the samples, worker start) in a fresh worker."""
    made = _unpickled(text)
    dataset, raw = made["dataset"], made["raw"]
    if made.get("iterable") is not None:
        fetch, size = IterableFetch(dataset, *made["iterable"]), INDICES
    elif made.get("getitems"):
        fetch, size = DeferredFetch(), len(dataset)
    else:
        fetch, size = (raw_fetcher(dataset) if raw else fetcher(dataset)), len(dataset)
    return fetch, size, raw, starter(dataset, made["worker_init_fn"])


def rebuild_collate(text):
    return collator(_unpickled(text))
