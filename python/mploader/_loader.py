"""mploader.DataLoader: torch.utils.data.DataLoader's signature over mploader's engine."""
import operator

import torch
from torch.utils.data import (BatchSampler, IterableDataset, RandomSampler, SequentialSampler,
                              default_convert)

from . import _C
from ._elastic import rank_batches, sampler_facts
from ._errors import OptionError
from ._memory_check import warn_of_large_containers
from ._native import NativeDatasetBase
from ._iterable import CHUNK, INDICES, IterableCollate, IterableFetch, index_of, is_exhausted
from ._plugins import check_forkserver_knows
from ._options import (check_batching, check_counts, check_dataset, check_generator,
                       check_iterable,
                       check_start_method, engine_options, start_method_of)
from ._spawning import MAIN_GUARD, SPAWNED_COMMAND, payload, payload_file, preparing_main
from ._state_check import check_state
from ._structure import native_batch, unflatten, unflatten_collated
from ._worker import (DeferredFetch, GetItems, OneSample, SampleFetch, collator, has_getitems,
                      raw_fetcher, starter)


class DataLoader:
    """torch.utils.data.DataLoader's arguments and meanings, over mploader's worker processes.

    ``dataset`` is a map-style Dataset (its __getitem__ runs in the workers) or one of
    mploader's C++ readers (mploader.vision.ImageFolder, TarShards, ...: no Python in the
    workers). mploader's own keywords: ``num_workers="auto"``, ``start_method``,
    ``max_restarts`` (worker restarts allowed per epoch), ``quarantine_after`` (deaths on one
    sample before it is left out), ``crash_dir`` (where crash reports go), ``max_shm_bytes``,
    ``max_batch_bytes`` and, for streams, ``shuffle_buffer``. docs/python.md lists every
    difference from torch's DataLoader."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True, start_method=None, max_restarts=0, quarantine_after=0,
                 crash_dir="", max_shm_bytes=0, max_batch_bytes=0, shuffle_buffer=0):
        check_counts(num_workers, timeout, prefetch_factor, persistent_workers)
        native = dataset._native if isinstance(dataset, NativeDatasetBase) else None
        check_dataset(dataset, native, batch_size, sampler, batch_sampler, collate_fn)
        check_iterable(dataset, shuffle, sampler, batch_sampler, num_workers)
        check_batching(batch_size, shuffle, sampler, batch_sampler, drop_last)
        check_generator(generator)
        self._stream = native is not None and native.streaming
        self._iterable = isinstance(dataset, IterableDataset)
        # Batches read by one __getitems__ call each, as torch's fetcher reads them.
        batched = batch_size is not None or batch_sampler is not None
        self._getitems = (native is None and not self._iterable and batched
                          and has_getitems(dataset))
        given_batch_sampler = batch_sampler
        if batch_sampler is not None:
            batch_size, drop_last = None, False
        if sampler is None and not (self._stream or self._iterable):
            sampler = (RandomSampler(dataset, generator=generator) if shuffle
                       else SequentialSampler(dataset))
        if batch_sampler is None and batch_size is not None and not (self._stream or
                                                                     self._iterable):
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        # Named when it gives an index that is not an integer: the user's batch_sampler, or
        # the sampler inside the BatchSampler made here.
        self._index_source = given_batch_sampler if given_batch_sampler is not None else sampler
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
        self._native = native
        method = start_method_of(multiprocessing_context, start_method)
        check_start_method(method, num_workers, native, worker_init_fn)
        if num_workers != 0:
            check_forkserver_knows(dataset, method)
            if native is None:  # before any worker copies a large container of objects
                warn_of_large_containers(dataset, num_workers, method)
        self._engine_options = engine_options(self, method, max_restarts, quarantine_after,
                                              crash_dir, max_shm_bytes, shuffle, shuffle_buffer)
        self._engine_options["max_batch_bytes"] = int(max_batch_bytes)
        if self._iterable and num_workers:
            # Each worker's iterator lives through the engine epochs of one epoch.
            self._engine_options["persistent_workers"] = True
        self._spawn_method = method if method != "fork" and num_workers != 0 else None
        if self._spawn_method is not None:
            self._prepare_spawn(method)
        self._loader = None
        self._decode = None  # (tensors, texts) -> the batch, chosen with the loader
        self._epoch = 0
        self._generation = 0
        self._engine_seed = None  # the workers' seed, drawn at the first iteration
        self._running = None  # the epoch running: what state_dict() needs to draw it again
        self._engine_epoch = 0  # an IterableDataset's: engine epochs run so far
        self._resume = None  # a loaded state, for the next iteration
        self._job = None  # a loaded job state (merge_states), for the next iteration

    def __len__(self):
        if self._iterable:  # as torch: from the dataset's own __len__, when it has one
            length = len(self.dataset)
            if self.batch_size is None:
                return length
            return length // self.batch_size if self.drop_last else -(-length // self.batch_size)
        if self._stream:  # the engine plans a stream's epochs
            self._make_loader(self._draw_base_seed() if self._engine_seed is None else None, [])
            return self._loader.batches_per_epoch()
        return len(self.batch_sampler if self.batch_sampler is not None else self.sampler)

    def _prepare_spawn(self, method):
        """Workers of a fresh interpreter: the engine runs SPAWNED_COMMAND, which rebuilds the
        dataset (and collate_fn) from payloads pickled here, so that a dataset that cannot be
        pickled is an OptionError now, not a failure in every worker."""
        _C.init(SPAWNED_COMMAND)
        if self._native is not None:
            return  # a C++ reader has a recipe of its own
        collate = self._batch_collate()
        made = {"dataset": self.dataset, "raw": collate is not None,
                "worker_init_fn": self.worker_init_fn,
                "iterable": (self.batch_size, self.drop_last) if self._iterable else None,
                "getitems": self._getitems}
        self._engine_options["recipe"], self._engine_options["recipe_fds"] = payload_file(
            made, "dataset", method,
            parts=[("dataset", self.dataset), ("worker_init_fn", self.worker_init_fn)])
        if collate is not None:
            self._engine_options["collate_recipe"] = payload(collate, "collate_fn", method)

    def _batch_collate(self):
        """The collate function run in the workers, or None for default_collate's stacking
        into shared memory. Without batching (batch_size=None) each sample goes alone through
        collate_fn, or default_convert, as in torch."""
        if self._iterable:
            return IterableCollate(self.collate_fn, self.batch_size is not None)
        if self.batch_sampler is None:
            return OneSample(self.collate_fn or default_convert)
        if self._getitems:
            return GetItems(self.dataset, self.collate_fn)
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
            if self._stream:
                return drew, base_seed, None
            job = (resume or {}).get("job") or self._job
            if job is not None:  # the rest of a job's epoch, shared out among this job's ranks
                return drew, base_seed, rank_batches(job, self.sampler, self.batch_size,
                                                     self.drop_last)
            if self.batch_sampler is None:
                return drew, base_seed, checked_plan(([i] for i in self.sampler), self.sampler)
            return drew, base_seed, checked_plan(self.batch_sampler, self._index_source)
        finally:
            if caller is not None:
                torch.set_rng_state(caller)

    def _make_loader(self, base_seed, plan):
        if self._loader is not None:
            return
        if self.num_workers != 0 and preparing_main():
            raise RuntimeError(MAIN_GUARD)
        if self._spawn_method is not None and "recipe" not in self._engine_options:
            self._prepare_spawn(self._spawn_method)  # a loader made again (after Ctrl-C)
        options = dict(self._engine_options)
        # The engine keeps the pickled dataset's shared memory for its workers (a loader made
        # again pickles the dataset again: it may have changed).
        self._engine_options.pop("recipe", None)
        self._engine_options.pop("recipe_fds", None)
        if self._engine_seed is None:
            self._engine_seed = base_seed & 0xFFFFFFFFFFFFFFFF
        options["seed"] = self._engine_seed
        # The slots hold the largest batch the plan has: batch_size may be far more than the
        # dataset holds (a batch_size of 10**9 over 100 samples is one batch of 100).
        options["max_batch_size"] = (max(len(b) for b in plan) if plan
                                     else (self.batch_size or 1))
        worker_start = (starter(self.dataset, self.worker_init_fn)
                        if self.num_workers != 0 else None)
        source = self._native if self._native is not None else SampleFetch(self.dataset)
        size = INDICES if self._iterable else len(self.dataset)
        # How a batch becomes Python again: a reader's by its names, a batch that Python code
        # collated in the worker as that code made it, else as default_collate nests it.
        self._decode = native_batch if self._native is not None else unflatten
        collate = self._batch_collate() if self._native is None else None
        if collate is not None:
            options["collate_fn"] = collator(collate)
            source = (IterableFetch(self.dataset, self.batch_size, self.drop_last)
                      if self._iterable else DeferredFetch() if self._getitems
                      else raw_fetcher(self.dataset))
            self._decode = lambda tensors, texts: unflatten_collated(tensors)
        self._loader = _C.Loader(source, size, options, worker_start)

    def _start(self, epoch, resume):
        rng = resume["rng"] if resume is not None else self._rng_state()
        drew, base_seed, plan = self._draw_epoch(resume)
        self._make_loader(base_seed, plan)
        if plan is not None:
            self._loader.set_plan(epoch, plan)
        if resume is not None:
            self._loader.load_state_dict(resume["engine"])
        else:
            self._loader.set_epoch(epoch)
        self._running = {"epoch": epoch, "rng": rng, "drew_base_seed": drew, "done": False,
                         "job": (resume or {}).get("job") or self._job}
        self._job = None

    def __iter__(self):
        if self._iterable:
            return self._iterate_stream_of_items()
        resume, self._resume = self._resume, None
        epoch = self._epoch
        self._start(epoch, resume)
        self._epoch = epoch + 1
        self._generation += 1
        return _Iterator(self, self._generation)

    def _iterate_stream_of_items(self):
        if self._loader is None:
            self._make_loader(self._draw_base_seed(), [[0]])
        self._generation += 1
        self._epoch += 1
        return _IterableIterator(self, self._generation)

    def state_dict(self):
        """Where loading stands, to resume it after a restart of the program with
        load_state_dict(): the running epoch and the batches the loop has received, the
        generators' states the epoch's order was drawn from, and the workers' seed. Save it
        with the model's checkpoint (torch.save); take it between batches."""
        if self._iterable:
            raise OptionError("mploader: DataLoader.state_dict: an IterableDataset's workers "
                              "each iterate their own copy, which mploader cannot replay; "
                              "resume needs a map-style Dataset or one of mploader's streams "
                              "(docs/python.md).", "dataset")
        state = {"mploader_state": 1, "epoch": self._epoch, "engine_seed": self._engine_seed}
        running = self._running
        if running is not None and not running["done"]:
            state.update(epoch=running["epoch"], rng=running["rng"],
                         drew_base_seed=running["drew_base_seed"],
                         engine=self._loader.state_dict())
            if running["job"] is not None:  # a resumed job's epoch: its plan is the job's
                state["job"] = running["job"]
            elif self._native is None and self.batch_size is not None:
                facts = sampler_facts(self.sampler, len(self.dataset), self.batch_size,
                                      self.drop_last)
                if facts is not None:
                    state["distributed"] = facts
        return state

    def load_state_dict(self, state):
        """Makes the next iteration resume the saved epoch with the batches not yet received,
        in the same order (the same dataset, batch_size, sampler and options as the state was
        taken with; num_workers and persistent_workers may differ); a state taken between
        epochs makes it start the next one. A job state (mploader.merge_states() of every
        rank's state, over torch's DistributedSampler) resumes on any number of ranks: the
        rest of its epoch is shared out among them. Raises OptionError("state") for anything
        else."""
        if check_state(state) == "job":
            self._epoch = int(state["distributed"]["epoch"])
            self._engine_seed = state.get("engine_seed")
            self._job, self._resume = state, None
            return
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


def _index(value, sampler):
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(
            f"mploader: DataLoader: the sampler {type(sampler).__name__} gave {value!r} "
            f"({type(value).__name__}) as an index; mploader's workers read samples by integer "
            "position (the epoch's plan, the slot sizing and resume states are positions from "
            "0 to len(dataset) - 1), so every index must be an integer (operator.index). Give "
            "a sampler of int indices; for a dataset keyed by other values, keep the keys in a "
            "list and look up keys[i] in __getitem__.") from None


def checked_plan(batches, sampler):
    """The epoch's batches as lists of int; anything else than an integer is refused (a float
    would be truncated to another sample), as torch refuses it."""
    plan = []
    for batch in batches:
        batch = list(batch)
        for index in batch:
            if type(index) is not int:
                batch = [_index(i, sampler) for i in batch]
                break
        plan.append(batch)
    return plan


def _next_batch(owner, start, iterator):
    """The engine's next batch. A KeyboardInterrupt (or another signal handler's exception)
    raised while it waits has stopped the workers: that epoch is over, and the DataLoader
    starts anew at its next iteration."""
    loader = owner._loader
    try:
        return loader.next(start)
    except BaseException:
        if loader.closed():
            owner._loader, owner._running = None, None
            iterator._done = True
        raise


def _check_current(owner, generation):
    """An iterator of an epoch a newer iterator has abandoned must not take that one's batches."""
    if owner._generation != generation:
        raise RuntimeError("mploader: this DataLoader iterator belongs to an epoch that "
                           "ended when a newer iterator of the same DataLoader began. "
                           "Iterate the newest one.")


class _Iterator:
    def __init__(self, owner, generation):
        self._owner = owner
        self._generation = generation
        self._first = True
        self._done = False

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._owner)

    def __next__(self):
        owner = self._owner
        if self._done:
            raise StopIteration
        _check_current(owner, self._generation)
        start, self._first = self._first, False  # a first batch that raises began the epoch
        batch = _next_batch(owner, start, self)
        if batch is None:
            self._done = True
            owner._running["done"] = True
            raise StopIteration
        tensors, texts, _, _ = batch
        return owner._decode(tensors, texts)


class _IterableIterator:
    """One epoch of an IterableDataset: engine epochs of CHUNK batches until every worker has
    said its iterator is done (mploader/_iterable.py)."""

    def __init__(self, owner, generation):
        self._owner = owner
        self._generation = generation
        self._workers = max(1, owner.num_workers)
        self._exhausted = set()
        self._first = False
        self._done = False
        self._chunk = 0

    def __iter__(self):
        return self

    def _next_chunk(self):
        owner = self._owner
        engine_epoch = owner._engine_epoch
        owner._engine_epoch += 1
        plan = [[index_of(self._generation, self._chunk, k)] for k in range(CHUNK)]
        self._chunk += 1
        owner._loader.set_plan(engine_epoch, plan)
        owner._loader.set_epoch(engine_epoch)
        self._first = True

    def __next__(self):
        owner = self._owner
        if self._done:
            raise StopIteration
        _check_current(owner, self._generation)
        while True:
            if self._chunk == 0 or self._first is None:
                self._next_chunk()
            start, self._first = self._first, False
            batch = _next_batch(owner, start, self)
            if batch is None:
                self._first = None  # this engine epoch is over: the next one continues
                continue
            tensors, _, _, worker = batch
            if not is_exhausted(tensors):
                return owner._decode(tensors, None)
            self._exhausted.add(worker)
            if len(self._exhausted) >= self._workers:
                self._done = True
                raise StopIteration
