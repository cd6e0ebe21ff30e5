"""The user's own C++ datasets, from a library built with mploader_add_dataset_plugin."""
import os

from . import _C
from ._native import NativeDatasetBase

# The libraries loaded, for workers started afresh (start_method spawn and forkserver), which
# load them again before they build their dataset (mploader/_spawned.py).
PLUGINS_ENV = "MPLOADER_PYTHON_PLUGINS"


def load_plugin(path):
    """Loads a library of datasets registered with MPLOADER_REGISTER_DATASET and returns their
    names. An OptionError says why a library cannot be used (not found, built against another
    mploader, a name registered twice, no dataset registered)."""
    path = os.path.abspath(os.fspath(path))
    names = list(_C.load_plugin(path))
    loaded = [p for p in os.environ.get(PLUGINS_ENV, "").split(os.pathsep) if p]
    if path not in loaded:
        os.environ[PLUGINS_ENV] = os.pathsep.join(loaded + [path])
    return names


class RegisteredDataset(NativeDatasetBase):
    """A dataset registered by name (a plugin's, or one of mploader's own recipes), made by its
    factory from ``config``; the DataLoader runs it in C++."""

    def __init__(self, name, config=""):
        super().__init__(_C.registered_dataset(str(name), str(config)))


def registered_dataset(name, config=""):
    """The dataset registered as ``name``, built from ``config``."""
    return RegisteredDataset(name, config)
