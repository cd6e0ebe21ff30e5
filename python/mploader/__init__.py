"""mploader: a multi-process data loader for PyTorch with crash-isolated workers.

``mploader.DataLoader`` takes torch.utils.data.DataLoader's arguments; batches are views of
shared memory the workers wrote into, and a worker that dies is explained. See docs/python.md.
"""
import torch  # first: the compiled module uses the libraries torch loads

from ._version_check import check_torch_version as _check_torch_version

_check_torch_version()

from . import _C  # noqa: E402
from ._errors import Error, OptionError, Timeout, WorkerCrashed  # noqa: E402
from ._elastic import merge_states  # noqa: E402
from ._loader import DataLoader  # noqa: E402
from ._plugins import load_plugin, registered_dataset  # noqa: E402
from ._shared import SharedDict, SharedList  # noqa: E402
from ._streams import StreamMixture, TokenStream  # noqa: E402
from ._tune import tune  # noqa: E402
from torch.utils.data import get_worker_info  # noqa: E402  (mploader's workers set it)

__version__ = _C.__version__

# The components built into this installation, each a module (mploader.vision, ...), and their
# readers under the names the C++ API gives them.
if hasattr(_C, "vision"):
    from . import vision  # noqa: E402,F401
if hasattr(_C, "shards"):
    from .shards import BlockShuffleSampler, PackedShards, TarShards  # noqa: E402,F401
if hasattr(_C, "parquet"):
    from .parquet import ParquetShards  # noqa: E402,F401
if hasattr(_C, "hdf5"):
    from .hdf5 import H5Dataset  # noqa: E402,F401


def features():
    """The optional components built into this installation, such as ``["vision", "shards"]``."""
    return list(_C.components())


__all__ = ["DataLoader", "Error", "OptionError", "SharedDict", "SharedList", "StreamMixture",
           "Timeout", "TokenStream", "WorkerCrashed", "features", "get_worker_info",
           "load_plugin", "merge_states", "registered_dataset", "tune"]
