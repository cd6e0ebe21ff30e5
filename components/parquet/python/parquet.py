"""mploader.parquet: Parquet files read in C++ in the workers, one shard per row group.

    data = mploader.ParquetShards("train/", columns=["input_ids", "label"])
    loader = mploader.DataLoader(data, batch_size=256, shuffle=True, num_workers=8,
                                 shuffle_buffer=4096)

A stream: shuffle=True shuffles the row groups (and shuffle_buffer the rows within reach); it
takes no sampler. docs/parquet.md says which column types become which tensors.
"""
import json
import os

import torch

from . import _C
from ._errors import OptionError
from ._native import NativeDatasetBase

_native = _C.parquet

# c10's names of the element types a column can have (c10::toString), as torch dtypes.
_DTYPES = {"Byte": torch.uint8, "Char": torch.int8, "Short": torch.int16, "Int": torch.int32,
           "Long": torch.int64, "Half": torch.float16, "Float": torch.float32,
           "Double": torch.float64, "Bool": torch.bool, "BFloat16": torch.bfloat16}


def _image_columns(image_columns, transform):
    """{column: JSON steps}: from a dict {column: transform}, or from a list of columns that
    all take ``transform``."""
    from .vision import transform_steps  # vision is built whenever parquet is (it decodes)

    if image_columns is None:
        if transform is not None:
            raise OptionError("mploader: ParquetShards: transform= is given but image_columns "
                              "names no column to apply it to. Give image_columns=['image'] "
                              "too.", "transform")
        return None
    if isinstance(image_columns, str):
        image_columns = [image_columns]
    if isinstance(image_columns, dict):
        if transform is not None:
            raise OptionError("mploader: ParquetShards: image_columns is a dict of transforms, "
                              "so transform= would be a second one. Give one of them.",
                              "transform")
        pairs = image_columns.items()
    else:
        pairs = ((name, transform) for name in image_columns)
    return {str(name): json.dumps(transform_steps(t)) for name, t in pairs}


class ParquetShards(NativeDatasetBase):
    """Parquet files, one shard per row group: ``files`` is a folder (every ".parquet" in it,
    sorted), one file, or a list of them. Each row is {column: tensor, text column: str}.

    Options, as ParquetShardsOptions names them: columns (the columns read, in this order),
    image_columns (JPEG/PNG columns decoded through ``transform``, or a dict {column:
    transform}; transforms as mploader.vision's), nulls ("refuse", "fill" or "mask"),
    column_nulls ({column: policy}), null_fill, read_ahead, cache_bytes, max_pixels."""

    def __init__(self, files, *, image_columns=None, transform=None, **options):
        images = _image_columns(image_columns, transform)
        if images is not None:
            options["image_columns"] = images
        if isinstance(files, (str, os.PathLike)):
            files = os.fspath(files)
            if os.path.isdir(files):
                super().__init__(_native.ParquetShards(None, files, **options))
                return
            files = [files]
        super().__init__(_native.ParquetShards([os.fspath(f) for f in files], None, **options))

    @property
    def columns(self):
        """The fields, as the footers describe them: a list of dicts with name, arrow_type,
        kind ("tensor", "list", "text" or "image"), dtype (a torch dtype; None for text) and
        shape (one row's)."""
        found = _native.columns(self._native)
        for c in found:
            c["dtype"] = _DTYPES.get(c["dtype"])
        return found
