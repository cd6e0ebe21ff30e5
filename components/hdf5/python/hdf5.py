"""mploader.hdf5: HDF5 datasets read in C++ in the workers, each of which opens the file itself.

    data = mploader.H5Dataset("train.h5", {"image": "/images", "label": "/labels"})
    loader = mploader.DataLoader(data, batch_size=256, shuffle=True, num_workers=8)

Map-style: it takes torch's samplers (shuffle=True, DistributedSampler, ...) as any Dataset
does. Sample i is row i of every HDF5 dataset named. docs/hdf5.md says which types become which
tensors.
"""
import os

import torch

from . import _C
from ._errors import OptionError
from ._native import NativeDatasetBase

_native = _C.hdf5

# c10's names of the element types a field can have (c10::toString), as torch dtypes.
_DTYPES = {"Byte": torch.uint8, "Char": torch.int8, "Short": torch.int16, "Int": torch.int32,
           "Long": torch.int64, "Half": torch.float16, "Float": torch.float32,
           "Double": torch.float64, "Bool": torch.bool, "BFloat16": torch.bfloat16}


def _field_pairs(fields):
    """[(name, path)] from a dict {name: path}, a list of (name, path), or a list of names
    (each read from the dataset of that name)."""
    if isinstance(fields, str):
        fields = [fields]
    if isinstance(fields, dict):
        return [(str(name), str(path)) for name, path in fields.items()]
    try:
        pairs = []
        for f in fields:
            if isinstance(f, str):
                pairs.append((f.strip("/").replace("/", "_") or f, f))
            else:
                name, path = f
                pairs.append((str(name), str(path)))
        return pairs
    except (TypeError, ValueError):
        raise OptionError("mploader: H5Dataset: fields=" + repr(fields) + " is not a dict "
                          "{name: path}, a list of (name, path) pairs or a list of dataset "
                          "paths. Give one of those.", "fields") from None


class H5Dataset(NativeDatasetBase):
    """Row i of each HDF5 dataset named in ``fields`` is sample i: ``fields`` is a dict
    {name: dataset path}, a list of (name, path) pairs, or a list of dataset paths (each
    field named after its path, "/labels" as "labels", "group/x" as "group_x").

    Options, as H5DatasetOptions names them: chunk_cache_bytes, swmr_read, probe_timeout_s."""

    def __init__(self, file, fields, **options):
        super().__init__(_native.H5Dataset(os.fspath(file), _field_pairs(fields), **options))

    @property
    def fields(self):
        """The fields as the file's metadata describes them: a list of dicts with name, path,
        file_type, dtype (a torch dtype; None for text), text, shape, chunk and filters."""
        found = _native.fields(self._native)
        for f in found:
            f["dtype"] = _DTYPES.get(f["dtype"])
        return found
