"""What dataset code can do to a worker, and what the training loop then sees: a worker's
sys.exit() or KeyboardInterrupt as an ordinary exception, descriptors closed under a worker,
samples that wait for one another across workers, Ctrl-C while the loop waits, a batch_size
far larger than the dataset, and states and generators that are not what they claim to be."""
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
import torch

import mploader
from parity import error_of


class Exiting(torch.utils.data.Dataset):
    def __init__(self, raise_what):
        self.raise_what = raise_what

    def __len__(self):
        return 8

    def __getitem__(self, index):
        if index == 2:
            if self.raise_what == "exit":
                sys.exit(3)
            raise KeyboardInterrupt
        return index


@pytest.mark.parametrize("raise_what", ["exit", "interrupt"])
def test_a_workers_exit_or_interrupt_reaches_the_loop_as_an_exception(raise_what):
    loader = mploader.DataLoader(Exiting(raise_what), batch_size=2, num_workers=2)
    got, caught = [], None
    try:
        for batch in loader:
            got.append(batch.tolist())
    except Exception as error:  # noqa: BLE001  (the point: `except Exception` catches it)
        caught = error
    assert isinstance(caught, mploader.Error), caught
    name = "SystemExit" if raise_what == "exit" else "KeyboardInterrupt"
    assert f"Caught {name} in DataLoader worker process" in str(caught)
    assert got == [[0, 1]]


class ClosingDescriptors(torch.utils.data.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, index):
        if index == 3:
            os.closerange(3, 4096)
        return index


def test_a_worker_that_closes_the_loaders_descriptors_is_reported_not_waited_for():
    # The timeout bounds the test where the loop used to wait for ever (it then blamed mploader).
    loader = mploader.DataLoader(ClosingDescriptors(), batch_size=2, num_workers=1, timeout=120)
    started = time.monotonic()
    with pytest.raises(mploader.WorkerCrashed) as caught:
        list(loader)
    # Generous for a loaded machine: without the check the loop waited for ever.
    assert time.monotonic() - started < 60
    assert "lost the descriptors" in str(caught.value)
    assert "close only the ones your code opened" in str(caught.value)
    assert "bug in mploader" not in str(caught.value)


class Meeting(torch.utils.data.Dataset):
    """PyTorch's test_worker_seed dataset: each sample waits until every worker has read one."""

    def __init__(self, size, num_workers):
        self.count = multiprocessing.Value("i", 0, lock=True)
        self.barrier = multiprocessing.Semaphore(0)
        self.num_workers, self.size = num_workers, size

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        with self.count.get_lock():
            self.count.value += 1
            if self.count.value == self.num_workers:
                self.barrier.release()
        # Bounded (torch's waits for ever): a loader that reads alone fails the test, not hangs it.
        if not self.barrier.acquire(timeout=120):
            raise RuntimeError("no other worker read a sample in 120 s")
        self.barrier.release()
        return torch.initial_seed()


def test_samples_that_wait_for_every_worker_load():
    loader = mploader.DataLoader(Meeting(4, 2), batch_size=1, num_workers=2)
    seeds = {int(batch) for batch in loader}
    assert len(seeds) == 2  # one seed per worker, as in torch's test_worker_seed


class Slow(torch.utils.data.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, index):
        if index > 0:  # sample 0 is read to size the slots
            time.sleep(120)
        return index


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie has not been reaped yet; it holds nothing
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.fixture
def ctrl_c_raises():
    """Python's own SIGINT handler for the test: a shell starts a background job (`cmd &`, as
    CI scripts do) with SIGINT ignored, and Python then installs none."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_ctrl_c_while_the_loop_waits_stops_the_workers_and_raises_keyboard_interrupt(
        ctrl_c_raises):
    loader = mploader.DataLoader(Slow(), batch_size=1, num_workers=2)
    iterator = iter(loader)
    assert next(iterator) == 0
    pids = loader.worker_pids()
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        next(iterator)
    assert time.monotonic() - started < 60  # the samples take 120 s each
    assert pids and not any(_alive(pid) for pid in pids)
    with pytest.raises(StopIteration):
        next(iterator)  # the interrupted epoch is over


class Alarmed(Exception):
    pass


def test_an_alarm_handlers_exception_ends_the_wait():
    def on_alarm(signum, frame):
        raise Alarmed()

    previous = signal.signal(signal.SIGALRM, on_alarm)
    try:
        loader = mploader.DataLoader(Slow(), batch_size=1, num_workers=1)
        iterator = iter(loader)
        next(iterator)
        signal.alarm(1)
        with pytest.raises(Alarmed):
            next(iterator)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_a_batch_size_beyond_the_dataset_sizes_the_slots_from_the_plan():
    loader = mploader.DataLoader(list(range(100)), batch_size=10**9, num_workers=2)
    batches = list(loader)
    assert len(batches) == 1 and batches[0].tolist() == list(range(100))


def test_rings_that_cannot_fit_in_memory_are_an_option_error_before_they_are_reserved():
    loader = mploader.DataLoader(list(range(100)), batch_size=10, num_workers=2,
                                 max_batch_bytes=1 << 50)
    error = error_of(lambda: next(iter(loader)))
    assert isinstance(error, mploader.OptionError), error
    assert "cannot be reserved" in str(error)


def _state():
    loader = mploader.DataLoader(list(range(10)), batch_size=2, num_workers=0)
    iterator = iter(loader)
    next(iterator)
    return loader.state_dict()


@pytest.mark.parametrize("change, says", [
    (lambda s: s.pop("epoch"), "no 'epoch'"),
    (lambda s: s.update(epoch="3"), "'epoch' is '3'"),
    (lambda s: s.update(engine_seed=-1), "'engine_seed' is -1"),
    (lambda s: s.update(engine=5), "'engine' is 5"),
    (lambda s: s.update(rng={"torch": "x"}), "'torch' is 'x'"),
    (lambda s: s.update(engine='{"not": "a state"}'), "state"),
    (lambda s: s.update(mploader_job_state=1, distributed={"epoch": 0}), "no 'dataset_size'"),
])
def test_a_forged_state_is_an_option_error_naming_what_is_wrong(change, says):
    state = _state()
    change(state)
    loader = mploader.DataLoader(list(range(10)), batch_size=2, num_workers=0)

    def load_and_iterate():
        loader.load_state_dict(state)
        next(iter(loader))

    error = error_of(load_and_iterate)
    assert isinstance(error, mploader.OptionError) and error.option == "state", error
    assert says in str(error)


def test_a_generator_that_is_not_a_torch_generator_is_a_type_error():
    error = error_of(lambda: mploader.DataLoader(list(range(4)), shuffle=True, generator="str"))
    assert isinstance(error, TypeError) and "not a torch.Generator" in str(error), error


def test_a_spawn_script_without_the_main_guard_is_told_the_idiom(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\nimport mploader\n\n"
        "class DS(torch.utils.data.Dataset):\n"
        "    def __len__(self):\n        return 4\n\n"
        "    def __getitem__(self, i):\n        return i\n\n"
        "loader = mploader.DataLoader(DS(), batch_size=2, num_workers=1,\n"
        "                             multiprocessing_context='spawn')\n"
        "print(list(loader))\n")
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=600, cwd=tmp_path)
    assert run.returncode != 0, run.stdout
    assert 'if __name__ == "__main__":' in run.stderr, run.stderr
    assert "worker_init" not in run.stderr and "max_batch_bytes" not in run.stderr, run.stderr
