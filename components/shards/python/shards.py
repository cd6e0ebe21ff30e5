"""mploader.shards: tar shards in the WebDataset convention, read in C++ in the workers.

    data = mploader.TarShards("train/", keys=["jpg", "cls"], int_keys=["cls"],
                              image_keys=["jpg"],
                              transform=[mploader.vision.RandomResizedCrop(224),
                                         mploader.vision.ToTensor()])
    loader = mploader.DataLoader(data, batch_size=256, shuffle=True, num_workers=8,
                                 shuffle_buffer=1000)

A stream: shuffle=True shuffles the shards (and shuffle_buffer the samples within reach); it
takes no sampler. docs/shards.md says how members become tensors.
"""
import json
import os

from . import _C
from ._errors import OptionError
from ._native import NativeDatasetBase

_native = _C.shards


def _image_keys(image_keys, transform):
    """{extension: JSON steps}: from a dict {extension: transform}, or from a list of
    extensions that all take ``transform``."""
    from .vision import transform_steps  # vision is built whenever shards is (it decodes)

    if image_keys is None:
        if transform is not None:
            raise OptionError("mploader: TarShards: transform= is given but image_keys names no "
                              "extension to apply it to. Give image_keys=['jpg', ...] too.",
                              "transform")
        return None
    if isinstance(image_keys, str):
        image_keys = [image_keys]
    if isinstance(image_keys, dict):
        if transform is not None:
            raise OptionError("mploader: TarShards: image_keys is a dict of transforms, so "
                              "transform= would be a second one. Give one of them.", "transform")
        pairs = image_keys.items()
    else:
        pairs = ((ext, transform) for ext in image_keys)
    return {str(ext): json.dumps(transform_steps(t)) for ext, t in pairs}


class TarShards(NativeDatasetBase):
    """Tar files in the WebDataset convention, one shard each: ``shards`` is a folder (every
    ".tar" in it, sorted), one path or URL, or a list of them (URLs may be http(s)://, s3://,
    brace patterns "shard-{000..099}.tar" and s3:// prefixes ending in '/').

    Each sample is {extension: tensor}. Options, as TarShardsOptions names them: keys (the
    extensions kept, all required), int_keys (members holding an integer: int64 scalars),
    image_keys (JPEG/PNG members decoded through ``transform``, or a dict {extension:
    transform}; transforms as mploader.vision's), on_bad_sample ("raise" or "skip"),
    max_consecutive_bad, read_ahead, read_ahead_bytes, max_pixels, and remote (a dict of
    RemoteOptions' fields: cache_dir, cache_limit_bytes, manifest, endpoint_url, aws_profile,
    region, connect_timeout_s, stall_timeout_s, cache_local_paths, prefetch_bytes,
    max_retries). Other members are uint8 tensors of their bytes."""

    def __init__(self, shards, *, image_keys=None, transform=None, **options):
        images = _image_keys(image_keys, transform)
        if images is not None:
            options["image_keys"] = images
        if isinstance(shards, (str, os.PathLike)):
            shards = os.fspath(shards)
            if os.path.isdir(shards):
                super().__init__(_native.TarShards(None, shards, **options))
                return
            shards = [shards]
        super().__init__(_native.TarShards([os.fspath(s) for s in shards], None, **options))

    @property
    def paths(self):
        """The tar files (or URLs), one per shard, in order."""
        return _native.paths(self._native)

    @property
    def samples_per_shard(self):
        """The samples the construction's scan counted in each shard."""
        return _native.samples_per_shard(self._native)
