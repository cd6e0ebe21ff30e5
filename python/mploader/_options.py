"""DataLoader's arguments checked as torch's DataLoader checks them, and mploader's own."""
import torch
from torch.utils.data import IterableDataset

from ._errors import OptionError

_START_METHODS = ("fork", "spawn", "forkserver")


def start_method_of(multiprocessing_context, start_method):
    """"fork", "spawn" or "forkserver", from start_method or multiprocessing_context."""
    if start_method is not None:
        chosen, given = start_method, "start_method"
    elif multiprocessing_context is None:
        return "fork"
    elif isinstance(multiprocessing_context, str):
        chosen, given = multiprocessing_context, "multiprocessing_context"
    else:
        chosen, given = multiprocessing_context.get_start_method(), "multiprocessing_context"
    if chosen not in _START_METHODS:
        raise OptionError(f"mploader: DataLoader: {given}={chosen!r} is not one of "
                          f"{', '.join(_START_METHODS)}. Give one of those.", given)
    return chosen


def check_counts(num_workers, timeout, prefetch_factor, persistent_workers):
    if num_workers != "auto" and (not isinstance(num_workers, int) or num_workers < 0):
        raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                         "disable multiprocessing, or num_workers='auto' to let mploader "
                         f"choose (got {num_workers!r})")
    if timeout < 0:
        raise ValueError(f"timeout option should be non-negative (got {timeout})")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError("prefetch_factor option could only be specified in multiprocessing. "
                         "let num_workers > 0 to enable multiprocessing, otherwise set "
                         "prefetch_factor to None.")
    if prefetch_factor is not None and prefetch_factor < 0:
        raise ValueError("prefetch_factor option should be non-negative")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")


def check_generator(generator):
    """A generator must be a torch.Generator: torch's samplers and the workers' seed draw
    from it (torch raises the same TypeError, later, from its first draw)."""
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"mploader: DataLoader: generator={generator!r} is a "
                        f"{type(generator).__name__}, not a torch.Generator. Give "
                        "torch.Generator().manual_seed(seed), or None for torch's global one.")


def check_batching(batch_size, shuffle, sampler, batch_sampler, drop_last):
    if batch_size is None and drop_last:
        raise ValueError("batch_size=None option disables auto-batching and is mutually "
                         "exclusive with drop_last")
    if sampler is not None and shuffle:
        raise ValueError("sampler option is mutually exclusive with shuffle")
    if batch_sampler is not None and (batch_size != 1 or shuffle or sampler is not None
                                      or drop_last):
        raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                         "shuffle, sampler, and drop_last")


def check_iterable(dataset, shuffle, sampler, batch_sampler, num_workers):
    """What an IterableDataset cannot take, as torch says it (and num_workers='auto': each
    worker iterates its own copy, so the count cannot change during an epoch)."""
    if not isinstance(dataset, IterableDataset):
        return
    if shuffle not in (False, None):
        raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle "
                         f"option, but got shuffle={shuffle}")
    if sampler is not None:
        raise ValueError("DataLoader with IterableDataset: expected unspecified sampler "
                         f"option, but got sampler={sampler}")
    if batch_sampler is not None:
        raise ValueError("DataLoader with IterableDataset: expected unspecified batch_sampler "
                         f"option, but got batch_sampler={batch_sampler}")
    if num_workers == "auto":
        raise OptionError("mploader: DataLoader: an IterableDataset is split among its workers "
                          "by get_worker_info(), so their number cannot change during an "
                          "epoch: give num_workers a number.", "num_workers")


def check_dataset(dataset, native, batch_size, sampler, batch_sampler, collate_fn):
    """What a dataset of its kind cannot take: a C++ reader makes its batches in C++ (no
    collate_fn, batches always), and a stream plans its own order (no sampler)."""
    if native is None:
        return
    if collate_fn is not None or batch_size is None:
        raise OptionError(f"mploader: DataLoader: {native.kind} makes its batches in C++, so "
                          "it takes no collate_fn and no batch_size=None. Leave them out, or "
                          "change the batch in the loop.",
                          "collate_fn" if collate_fn is not None else "batch_size")
    if native.streaming and (sampler is not None or batch_sampler is not None):
        raise OptionError(f"mploader: DataLoader: {native.kind} is a stream: it plans its own "
                          "order (its shards shuffled with shuffle=True, shared out among "
                          "ranks and workers), so it takes no sampler or batch_sampler. Leave "
                          "them out.", "sampler" if sampler is not None else "batch_sampler")


def check_start_method(start_method, num_workers, native, worker_init_fn):
    if start_method != "fork" and num_workers != 0 and native is not None and worker_init_fn:
        raise OptionError(
            f"mploader: DataLoader: with start_method {start_method!r} the workers of "
            f"{native.kind} run no Python, so they cannot call worker_init_fn. Leave it out, "
            "or use start_method='fork'.", "worker_init_fn")


def engine_options(loader, start_method, max_restarts, quarantine_after, crash_dir,
                   max_shm_bytes, shuffle, shuffle_buffer):
    return {
        "num_workers": -1 if loader.num_workers == "auto" else loader.num_workers,
        "prefetch_factor": loader.prefetch_factor or 2,
        "pin_memory": bool(loader.pin_memory),
        "persistent_workers": bool(loader.persistent_workers),
        "in_order": bool(loader.in_order),
        "timeout_ms": int(loader.timeout * 1000),
        "start_method": start_method,
        "max_restarts_per_epoch": int(max_restarts),
        "quarantine_after": int(quarantine_after),
        "crash_dir": str(crash_dir),
        "max_shm_bytes": int(max_shm_bytes),
        "batch_size": int(loader.batch_size or 1),
        "shuffle": bool(shuffle),
        "drop_last": bool(loader.drop_last),
        "shuffle_buffer": int(shuffle_buffer),
    }
