"""mploader.DataLoader: torch.utils.data.DataLoader's signature over mploader's engine."""

import torch
from torch.utils.data import (BatchSampler, IterableDataset, RandomSampler, SequentialSampler,
                              default_convert)

from . import _C
from ._errors import OptionError
from ._structure import unflatten, unflatten_collated
from ._worker import collator, fetcher, raw_fetcher, starter

_START_METHODS = ("fork", "spawn", "forkserver")


def _start_method(multiprocessing_context, start_method):
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


def _check_counts(num_workers, timeout, prefetch_factor, persistent_workers):
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


class DataLoader:
    """torch.utils.data.DataLoader's arguments and meanings, over mploader's worker processes.

    mploader's own keywords: ``num_workers="auto"``, ``start_method``, ``max_restarts`` (worker
    restarts allowed per epoch), ``quarantine_after`` (deaths on one sample before it is left
    out), ``crash_dir`` (where crash reports go) and ``max_shm_bytes``. docs/python.md lists
    every difference from torch's DataLoader."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True, start_method=None, max_restarts=0, quarantine_after=0,
                 crash_dir="", max_shm_bytes=0):
        _check_counts(num_workers, timeout, prefetch_factor, persistent_workers)
        if isinstance(dataset, IterableDataset):
            raise OptionError("mploader: DataLoader: an IterableDataset is not supported yet; "
                              "give a map-style Dataset (__len__ and __getitem__), or use "
                              "torch.utils.data.DataLoader for this one.", "dataset")
        if batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        if sampler is None:
            sampler = (RandomSampler(dataset, generator=generator) if shuffle
                       else SequentialSampler(dataset))
        if batch_sampler is None and batch_size is not None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.prefetch_factor = (2 if num_workers != 0 and prefetch_factor is None
                                else prefetch_factor)
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.generator = generator
        self.persistent_workers = persistent_workers
        self.collate_fn = collate_fn
        self.in_order = in_order
        self._start_method = _start_method(multiprocessing_context, start_method)
        if self._start_method != "fork" and num_workers != 0:
            raise OptionError(
                f"mploader: DataLoader: start_method {self._start_method!r} does not take a "
                "Python dataset yet; its workers are forked. Use start_method='fork' (the "
                "default on Linux).", "start_method")
        self._engine_options = {
            "num_workers": -1 if num_workers == "auto" else num_workers,
            "prefetch_factor": self.prefetch_factor or 2,
            "pin_memory": bool(pin_memory),
            "persistent_workers": bool(persistent_workers),
            "in_order": bool(in_order),
            "timeout_ms": int(timeout * 1000),
            "start_method": self._start_method,
            "max_restarts_per_epoch": int(max_restarts),
            "quarantine_after": int(quarantine_after),
            "crash_dir": str(crash_dir),
            "max_shm_bytes": int(max_shm_bytes),
        }
        self._loader = None
        self._epoch = 0
        self._generation = 0
        self._engine_seed = None  # the workers' seed, drawn at the first iteration
        self._running = None  # the epoch running: what state_dict() needs to draw it again
        self._resume = None  # a loaded state, for the next iteration

    def __len__(self):
        return len(self.batch_sampler if self.batch_sampler is not None else self.sampler)

    def _batch_collate(self):
        """The collate function run in the workers, or None for default_collate's stacking
        into shared memory. Without batching (batch_size=None) each sample goes alone through
        collate_fn, or default_convert, as in torch."""
        if self.batch_sampler is None:
            convert = self.collate_fn or default_convert
            return lambda samples: convert(samples[0])
        return self.collate_fn

    def set_epoch(self, epoch):
        """The epoch the next iteration runs (by default each iteration runs the next one).
        It seeds the workers; call the sampler's own set_epoch too (DistributedSampler)."""
        self._epoch = int(epoch)
        self._resume = None

    def _draw_base_seed(self):
        # Drawn as torch's DataLoader draws it, before the sampler's own draw: the same
        # torch.manual_seed (or generator) gives the same order of indices as torch.
        return int(torch.empty((), dtype=torch.int64).random_(generator=self.generator).item())

    def _rng_state(self):
        return {"torch": torch.get_rng_state(),
                "generator": None if self.generator is None else self.generator.get_state()}

    def _draw_epoch(self, resume):
        """(whether the base seed was drawn, the base seed, the batches): torch's draws for a
        new epoch, or again the saved epoch's, from the generators' states it started with.
        Drawing again leaves torch's global generator as the caller had it."""
        caller = None
        if resume is not None:
            caller = torch.get_rng_state()
            torch.set_rng_state(resume["rng"]["torch"])
            if self.generator is not None and resume["rng"]["generator"] is not None:
                self.generator.set_state(resume["rng"]["generator"])
            drew = resume["drew_base_seed"]
        else:
            drew = self._loader is None or not (self.persistent_workers and self.num_workers)
        try:
            base_seed = self._draw_base_seed() if drew else None
            if self.batch_sampler is None:
                return drew, base_seed, [[index] for index in self.sampler]
            return drew, base_seed, [list(batch) for batch in self.batch_sampler]
        finally:
            if caller is not None:
                torch.set_rng_state(caller)

    def _start(self, epoch, resume):
        rng = resume["rng"] if resume is not None else self._rng_state()
        drew, base_seed, plan = self._draw_epoch(resume)
        if self._loader is None:
            options = dict(self._engine_options)
            self._engine_seed = (self._engine_seed if self._engine_seed is not None
                                 else base_seed & 0xFFFFFFFFFFFFFFFF)
            options["seed"] = self._engine_seed
            options["max_batch_size"] = max([self.batch_size or 1] + [len(b) for b in plan])
            worker_start = (starter(self.dataset, self.worker_init_fn)
                            if self.num_workers != 0 else None)
            fetch = fetcher(self.dataset)
            if self._batch_collate() is not None:
                options["collate_fn"] = collator(self._batch_collate())
                fetch = raw_fetcher(self.dataset)
            self._loader = _C.Loader(fetch, len(self.dataset), options, worker_start)
        self._loader.set_plan(epoch, plan)
        if resume is not None:
            self._loader.load_state_dict(resume["engine"])
        else:
            self._loader.set_epoch(epoch)
        self._running = {"epoch": epoch, "rng": rng, "drew_base_seed": drew, "done": False}

    def __iter__(self):
        resume, self._resume = self._resume, None
        epoch = self._epoch
        self._start(epoch, resume)
        self._epoch = epoch + 1
        self._generation += 1
        return _Iterator(self, self._generation)

    def state_dict(self):
        """Where loading stands, to resume it after a restart of the program with
        load_state_dict(): the running epoch and the batches the loop has received, the
        generators' states the epoch's order was drawn from, and the workers' seed. Save it
        with the model's checkpoint (torch.save); take it between batches."""
        state = {"mploader_state": 1, "epoch": self._epoch, "engine_seed": self._engine_seed}
        running = self._running
        if running is not None and not running["done"]:
            state.update(epoch=running["epoch"], rng=running["rng"],
                         drew_base_seed=running["drew_base_seed"],
                         engine=self._loader.state_dict())
        return state

    def load_state_dict(self, state):
        """Makes the next iteration resume the saved epoch with the batches not yet received,
        in the same order (the same dataset, batch_size, sampler and options as the state was
        taken with; num_workers and persistent_workers may differ); a state taken between
        epochs makes it start the next one. Raises OptionError("state") for anything else."""
        if not isinstance(state, dict) or state.get("mploader_state") != 1:
            raise OptionError("mploader: DataLoader.load_state_dict: the state is not one that "
                              "DataLoader.state_dict() returned (no 'mploader_state': 1). Give "
                              "the dict state_dict() returned, as saved.", "state")
        if self._loader is not None and state.get("engine_seed") != self._engine_seed:
            raise OptionError("mploader: DataLoader.load_state_dict: this DataLoader has started "
                              "its workers with another seed than the state's. Load the state "
                              "into a new DataLoader, before iterating it.", "state")
        self._epoch = int(state["epoch"])
        self._engine_seed = state.get("engine_seed")
        self._resume = state if "engine" in state else None

    def stats(self):
        """The engine's counters as a dict: batches, wait_ns, workers, epochs, quarantined,
        memory_growth_warnings, ... ({} before the first iteration)."""
        return self._loader.stats() if self._loader is not None else {}

    def worker_pids(self):
        """The process ids of the running workers."""
        return self._loader.worker_pids() if self._loader is not None else []


class _Iterator:
    def __init__(self, owner, generation):
        self._owner = owner
        self._generation = generation
        self._first = True
        self._done = False
        self._yielded = 0

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._owner)

    def __next__(self):
        owner = self._owner
        if self._done:
            raise StopIteration
        if owner._generation != self._generation:
            raise RuntimeError("mploader: this DataLoader iterator belongs to an epoch that "
                               "ended when a newer iterator of the same DataLoader began. "
                               "Iterate the newest one.")
        start, self._first = self._first, False  # a first batch that raises began the epoch
        batch = owner._loader.next(start)
        if batch is None:
            self._done = True
            owner._running["done"] = True
            raise StopIteration
        self._yielded += 1
        tensors, texts, _ = batch
        if owner.collate_fn is not None or owner.batch_sampler is None:
            return unflatten_collated(tensors)
        return unflatten(tensors, texts)
