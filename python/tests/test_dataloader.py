"""mploader.DataLoader over a Python dataset: what torch's DataLoader cannot do (a worker that
segfaults or is killed is explained and replaced, a kept batch stays as it was), and the
package itself (features, the torch version check)."""
import ctypes
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

import mploader


class Squares(torch.utils.data.Dataset):
    """Sample i: i*i as a tensor and the pid of the process that read it."""

    def __init__(self, n=40):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"value": torch.tensor(i * i), "pid": os.getpid(), "name": f"s{i}"}


class SegfaultAt(Squares):
    def __init__(self, bad, n=40):
        super().__init__(n)
        self.bad = bad

    def __getitem__(self, i):
        if i == self.bad:
            ctypes.string_at(0)  # reads address 0: SIGSEGV in the worker
        return super().__getitem__(i)


class SlowSquares(Squares):
    def __getitem__(self, i):
        time.sleep(0.02)
        return super().__getitem__(i)


def values(batches):
    return sorted(int(v) for b in batches for v in b["value"].sqrt().round().long())


def test_batches_are_nested_as_default_collate_makes_them():
    loader = mploader.DataLoader(Squares(10), batch_size=4, num_workers=2)
    batches = list(loader)
    assert [len(b["name"]) for b in batches] == [4, 4, 2]
    assert batches[0]["name"] == ["s0", "s1", "s2", "s3"]
    assert batches[0]["value"].tolist() == [0, 1, 4, 9]
    assert batches[0]["pid"].dtype == torch.int64
    assert all(p != os.getpid() for b in batches for p in b["pid"].tolist())


def test_a_segfaulting_sample_is_explained(tmp_path):
    loader = mploader.DataLoader(SegfaultAt(13), batch_size=4, num_workers=2,
                                 crash_dir=str(tmp_path))
    with pytest.raises(mploader.WorkerCrashed) as caught:
        list(loader)
    error = caught.value
    assert error.cause == "segfault"
    assert error.signal == signal.SIGSEGV
    assert 13 in error.indices
    assert error.report_path and os.path.exists(error.report_path)
    assert "segfault" in str(error)


def test_a_sample_that_always_crashes_is_quarantined_and_the_rest_delivered(tmp_path):
    loader = mploader.DataLoader(SegfaultAt(13), batch_size=4, num_workers=2, max_restarts=4,
                                 quarantine_after=2, crash_dir=str(tmp_path))
    got = values(list(loader))
    assert got == [i for i in range(40) if i != 13]
    quarantined = loader.stats()["quarantined"]
    assert [q["index"] for q in quarantined] == [13]
    assert quarantined[0]["cause"] == "segfault"


def test_a_killed_worker_is_restarted_and_runs_python_again(tmp_path):
    loader = mploader.DataLoader(SlowSquares(60), batch_size=2, num_workers=2, max_restarts=2,
                                 crash_dir=str(tmp_path))
    it = iter(loader)
    first = next(it)
    started = set(loader.worker_pids())
    victim = loader.worker_pids()[0]
    os.kill(victim, signal.SIGKILL)
    rest = list(it)
    batches = [first] + rest
    assert values(batches) == list(range(60))  # every sample once
    pids = {p for b in batches for p in b["pid"].tolist()}
    assert len(started) == 2 and victim in pids
    assert pids - started, "no process started after the kill ran __getitem__"


def test_worker_init_fn_runs_again_in_a_restarted_worker(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()

    def note_start(worker_id):
        part = marks / f".{os.getpid()}"
        part.write_text(str(worker_id))
        part.rename(marks / f"{os.getpid()}")  # whole or not at all, whenever it is read
        assert torch.utils.data.get_worker_info().id == worker_id

    # Persistent: the replacement outlives the epoch, which worker 0 alone may have finished on
    # a busy machine before the replacement's worker_init_fn ran.
    loader = mploader.DataLoader(SlowSquares(40), batch_size=2, num_workers=2, max_restarts=1,
                                 worker_init_fn=note_start, crash_dir=str(tmp_path),
                                 persistent_workers=True)
    def wait_for_start(pid):  # for a hang: worker_init_fn runs as the worker starts
        deadline = time.monotonic() + 60
        while not (marks / str(pid)).exists() and time.monotonic() < deadline:
            time.sleep(0.05)

    it = iter(loader)
    next(it)
    victim = loader.worker_pids()[1]
    wait_for_start(victim)  # on a busy machine worker 0 may have given the first batch alone
    os.kill(victim, signal.SIGKILL)
    list(it)  # its two batches are issued again: the loop sees the death and replaces it
    replacement = loader.worker_pids()[1]
    assert replacement != victim
    wait_for_start(replacement)
    started = {int(p.name): int(p.read_text()) for p in marks.iterdir()
               if not p.name.startswith(".")}
    # Worker 1 and its replacement; worker 0 once, and once more in the short-lived process
    # that reads sample 0 to size the shared memory before the workers start.
    assert list(started.values()).count(1) == 2
    assert victim in started and started[victim] == 1


def test_a_kept_batch_is_never_overwritten():
    loader = mploader.DataLoader(Squares(64), batch_size=4, num_workers=2, prefetch_factor=1)
    kept = []
    for batch in loader:
        kept.append((batch["value"], batch["value"].clone()))
    for view, copy in kept:
        assert torch.equal(view, copy)
    assert len(kept) == 16


def test_an_error_in_getitem_keeps_its_type_and_the_workers_traceback():
    loader = mploader.DataLoader(BadSample(), batch_size=2, num_workers=2)
    with pytest.raises(BadSample.Error) as caught:
        list(loader)
    text = str(caught.value)
    assert "Caught Error in DataLoader worker process" in text
    assert "sample 3 is bad" in text
    assert "Traceback (most recent call last)" in text and "__getitem__" in text
    assert "test_dataloader.py" in text  # the worker's frames


class BadSample(Squares):
    class Error(Exception):
        pass

    def __getitem__(self, i):
        if i == 3:
            raise BadSample.Error("sample 3 is bad")
        return super().__getitem__(i)


def test_the_loop_continues_after_a_python_error():
    loader = mploader.DataLoader(BadSample(), batch_size=2, num_workers=0)
    it = iter(loader)
    assert next(it)["value"].tolist() == [0, 1]
    with pytest.raises(BadSample.Error):
        next(it)
    assert next(it)["value"].tolist() == [16, 25]


def test_options_the_engine_refuses_are_option_errors():
    with pytest.raises(mploader.OptionError) as caught:
        mploader.DataLoader(Squares(), num_workers=2, start_method="threads")
    assert caught.value.option == "start_method"
    assert isinstance(caught.value, ValueError)


def test_stats_count_the_batches():
    loader = mploader.DataLoader(Squares(12), batch_size=3, num_workers=2)
    assert list(loader) and loader.stats()["batches"] == 4
    assert len(loader.stats()["workers"]) == 2


def test_features_lists_the_built_components():
    features = mploader.features()
    assert isinstance(features, list)
    assert set(features) <= {"vision", "remote", "shards", "hdf5", "parquet"}


def test_a_package_built_for_another_torch_refuses_to_import(tmp_path):
    package = os.path.dirname(mploader.__file__)
    fake = tmp_path / "mploader"
    fake.mkdir()
    for name in os.listdir(package):
        if name.endswith((".py", ".so")):
            os.symlink(os.path.join(package, name), fake / name)
    (fake / "_built_with_torch.txt").write_text("1.0.0\n")
    run = subprocess.run([sys.executable, "-c", "import mploader"], cwd=tmp_path,
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ""})
    assert run.returncode != 0
    assert "built for torch 1.0.0" in run.stderr
    assert torch.__version__ in run.stderr and "pip install" in run.stderr


def test_num_workers_auto_delivers_every_sample_each_epoch():
    loader = mploader.DataLoader(SlowSquares(120), batch_size=4, num_workers="auto",
                                 persistent_workers=True)
    for _ in range(2):
        assert values(list(loader)) == list(range(120))
        assert loader.stats()["workers_running"] >= 1
        assert all(p != os.getpid() for p in loader.worker_pids())


def test_tune_measures_each_worker_count_and_recommends_one():
    result = mploader.tune(SlowSquares(400), batch_size=4, workers=[0, 2], batches_per_point=6,
                           time_budget_s=30)
    assert [p["workers"] for p in result["table"]] == [0, 2]
    assert all(p["samples_per_s"] > 0 for p in result["table"])
    assert result["recommendation"]["num_workers"] in (0, 2)
    assert result["recommendation"]["bound"] and "recommended: num_workers=" in result["summary"]
    with pytest.raises(mploader.OptionError, match="unknown option 'workerz'"):
        mploader._C.tune(mploader._worker.SampleFetch(Squares()), 40, 4, False, workerz=[1])


def test_the_package_works_without_numpy():
    # numpy is not one of torch's requirements: a fresh environment may not have it.
    code = """
import sys
sys.modules["numpy"] = None  # import numpy now raises ImportError
import torch, mploader
class D(torch.utils.data.Dataset):
    def __len__(self):
        return 8
    def __getitem__(self, i):
        return {"x": torch.full((2,), i), "n": i, "s": str(i)}
batches = list(mploader.DataLoader(D(), batch_size=4, num_workers=2))
print(batches[1]["n"].tolist(), batches[1]["s"])
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "[4, 5, 6, 7] ['4', '5', '6', '7']"


def test_with_max_batch_bytes_no_sample_is_read_ahead(tmp_path):
    marks = tmp_path / "reads"
    marks.mkdir()

    class Logged(Squares):
        def __getitem__(self, i):
            (marks / f"{i}-{os.getpid()}").touch()
            return super().__getitem__(i)

    list(mploader.DataLoader(Logged(8), batch_size=4, num_workers=2, max_batch_bytes=4096))
    reads = [p.name.split("-")[0] for p in marks.iterdir()]
    assert sorted(map(int, reads)) == list(range(8))  # each sample once: no sizing read
