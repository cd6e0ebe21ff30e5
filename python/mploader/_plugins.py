"""The user's own C++ datasets, from a library built with mploader_add_dataset_plugin."""
import os

from . import _C
from ._errors import OptionError
from ._native import NativeDatasetBase

# The libraries loaded, for workers started afresh (start_method spawn and forkserver), which
# load them again before they build their dataset (mploader/_spawned.py).
PLUGINS_ENV = "MPLOADER_PYTHON_PLUGINS"
# Datasets of libraries loaded after this process's forkserver started: its workers, forked
# from it, cannot build them.
_after_forkserver = set()


def load_plugin(path):
    """Loads a library of datasets registered with MPLOADER_REGISTER_DATASET and returns their
    names. An OptionError says why a library cannot be used (not found, built against another
    mploader, a name registered twice, no dataset registered)."""
    path = os.path.abspath(os.fspath(path))
    late = _C.forkserver_started()
    names = list(_C.load_plugin(path))
    if late:
        _after_forkserver.update(names)
    loaded = [p for p in os.environ.get(PLUGINS_ENV, "").split(os.pathsep) if p]
    if path not in loaded:
        os.environ[PLUGINS_ENV] = os.pathsep.join(loaded + [path])
    return names


class RegisteredDataset(NativeDatasetBase):
    """A dataset registered by name (a plugin's, or one of mploader's own recipes), made by its
    factory from ``config``; the DataLoader runs it in C++."""

    def __init__(self, name, config=""):
        super().__init__(_C.registered_dataset(str(name), str(config)))
        self.name = str(name)


def check_forkserver_knows(dataset, start_method):
    """An OptionError for a plugin's dataset that the forkserver's workers cannot build."""
    if (start_method == "forkserver" and isinstance(dataset, RegisteredDataset)
            and dataset.name in _after_forkserver):
        raise OptionError(
            f"mploader: DataLoader: {dataset.name} comes from a library loaded after this "
            "process's forkserver started, and the workers it forks know only the libraries "
            "loaded before. Call mploader.load_plugin() before the first DataLoader with "
            "start_method='forkserver', or use 'fork' or 'spawn'.", "start_method")


def registered_dataset(name, config=""):
    """The dataset registered as ``name``, built from ``config``."""
    return RegisteredDataset(name, config)
