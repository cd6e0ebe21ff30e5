"""The user's C++ datasets from a library built with mploader_add_dataset_plugin:
mploader.load_plugin() and mploader.registered_dataset(), on every start method."""
import pathlib
import subprocess
import sys

import pytest

import mploader

# The example plugin (examples/dataset_plugin) that the C++ suite builds (scripts/test builds
# it before the Python suite runs).
PLUGIN = (pathlib.Path(__file__).resolve().parents[2] / "build" / "tests" / "plugin" /
          "example" / "libexample_datasets.so")


@pytest.fixture(scope="module")
def sines():
    if not PLUGIN.exists():
        pytest.skip(f"{PLUGIN} is not built: the C++ suite (scripts/test) builds it")
    assert "example.sines" in mploader.load_plugin(PLUGIN)
    return mploader.registered_dataset("example.sines", "size=60 length=32 classes=3")


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_plugins_dataset_runs_in_the_workers(sines, method):
    batches = list(mploader.DataLoader(sines, batch_size=8, shuffle=True, num_workers=2,
                                       start_method=method))
    assert sum(len(b["label"]) for b in batches) == 60
    assert batches[0]["signal"].shape[1:] == (1, 32)
    assert set(sum((b["label"].tolist() for b in batches), [])) == {0, 1, 2}


def test_what_cannot_be_used_is_an_option_error(sines, tmp_path):
    with pytest.raises(mploader.OptionError, match="no dataset is registered as 'example.cosines'"):
        mploader.registered_dataset("example.cosines")
    assert mploader.load_plugin(PLUGIN) == ["example.sines"]  # again: nothing new to load
    junk = tmp_path / "libjunk.so"
    junk.write_bytes(b"not a library")
    with pytest.raises(mploader.OptionError, match="cannot be loaded"):
        mploader.load_plugin(junk)
    with pytest.raises(mploader.OptionError, match="size='0'") as caught:
        mploader.registered_dataset("example.sines", "size=0")
    assert caught.value.option == "config"


FORKSERVER_RUN = """
import sys, torch, mploader
def batches(dataset):
    return list(mploader.DataLoader(dataset, batch_size=8, num_workers=2,
                                    start_method="forkserver"))
if sys.argv[1] == "before":
    mploader.load_plugin(sys.argv[2])
    print(sum(len(b["label"]) for b in batches(
        mploader.registered_dataset("example.sines", "size=60 length=32 classes=3"))))
else:
    batches(torch.utils.data.TensorDataset(torch.arange(16)))  # the forkserver starts
    mploader.load_plugin(sys.argv[2])
    try:
        batches(mploader.registered_dataset("example.sines", "size=60 length=32 classes=3"))
    except mploader.OptionError as e:
        print(e.option, e)
"""


def test_the_forkserver_knows_the_plugins_loaded_before_it_started(sines, tmp_path):
    def run(order):
        done = subprocess.run([sys.executable, "-c", FORKSERVER_RUN, order, str(PLUGIN)],
                              capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout
    assert run("before").strip() == "60"
    refused = run("after")
    assert refused.startswith("start_method ") and "loaded after" in refused
