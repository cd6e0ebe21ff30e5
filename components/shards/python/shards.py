"""mploader.shards: tar shards in the WebDataset convention, and packs of them that
mploader-pack wrote, read in C++ in the workers.

    data = mploader.TarShards("train/", keys=["jpg", "cls"], int_keys=["cls"],
                              image_keys=["jpg"],
                              transform=[mploader.vision.RandomResizedCrop(224),
                                         mploader.vision.ToTensor()])
    loader = mploader.DataLoader(data, batch_size=256, shuffle=True, num_workers=8,
                                 shuffle_buffer=1000)

A stream: shuffle=True shuffles the shards (and shuffle_buffer the samples within reach); it
takes no sampler. docs/shards.md says how members become tensors.

    data = mploader.PackedShards("train-packed/", image_fields={"image": transform})
    loader = mploader.DataLoader(data, batch_size=256, num_workers=8,
                                 sampler=DistributedSampler(data))

A pack is map-style: any sampler, torch's DistributedSampler in its order included, or
BlockShuffleSampler for a pack by URL larger than the shard cache. docs/packing.md.
"""
import json
import os

import torch.distributed
from torch.utils.data import Sampler

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


class PackedShards(NativeDatasetBase):
    """A pack that mploader-pack wrote, read by index: ``pack`` is its folder (or its
    mploader-pack.json), or either by URL (http(s)://, s3://). Each sample is {field: value}:
    images as their file's bytes (uint8), or decoded through the transform of
    ``image_fields={field: transform}``; integers as int64 scalars; arrays as their tensors;
    text as str. Options, as PackedShardsOptions names them: max_pixels, verify_local,
    remote_read ("ranges" or "whole_shards"), merge_gap_bytes, max_request_bytes,
    max_held_shards, and remote (a dict of RemoteOptions' fields, as TarShards takes)."""

    def __init__(self, pack, *, image_fields=None, **options):
        if image_fields is not None:
            from .vision import transform_steps

            if not isinstance(image_fields, dict):
                raise OptionError("mploader: PackedShards: image_fields must be a dict "
                                  "{field: transform}, e.g. {'image': RandomResizedCrop(224)}.",
                                  "image_fields")
            options["image_fields"] = {str(f): json.dumps(transform_steps(t))
                                       for f, t in image_fields.items()}
        super().__init__(_native.PackedShards(os.fspath(pack), **options))

    @property
    def shard_sizes(self):
        """Each shard's sample count, in order: what BlockShuffleSampler groups by."""
        return _native.shard_sizes(self._native)

    @property
    def fields(self):
        """The pack's fields as "name:kind" (kind image, int, npy or text)."""
        return _native.fields(self._native)


class BlockShuffleSampler(Sampler):
    """A shuffle that reads a block of shards at a time (MosaicML's py1b): per epoch the shards
    in a seeded order, cut into blocks of ``block_samples``, each block shuffled; rank r takes
    a contiguous run of that order, so a rank's workers read a block's shards at once. With
    ``dataset`` a PackedShards its shard sizes are taken. num_replicas and rank default as
    DistributedSampler's; call set_epoch() each epoch. docs/packing.md compares its mix with a
    full shuffle and a stream's shuffle buffer."""

    def __init__(self, dataset, block_samples, num_replicas=None, rank=None, seed=0,
                 drop_last=False, shard_samples=None):
        if num_replicas is None:
            num_replicas = (torch.distributed.get_world_size()
                            if torch.distributed.is_available() and
                            torch.distributed.is_initialized() else 1)
        if rank is None:
            rank = (torch.distributed.get_rank() if torch.distributed.is_available() and
                    torch.distributed.is_initialized() else 0)
        if shard_samples is None:
            shard_samples = getattr(dataset, "shard_sizes", None) or []
        self.size = len(dataset)
        self.block_samples = int(block_samples)
        self.num_replicas, self.rank, self.seed = int(num_replicas), int(rank), int(seed)
        self.drop_last = bool(drop_last)
        self.shard_samples = list(shard_samples)
        self.epoch = 0
        self._indices(0)  # the options checked now, not at the first epoch

    def set_epoch(self, epoch):
        self.epoch = int(epoch)

    def _indices(self, epoch):
        return _native.block_shuffle_indices(self.size, self.block_samples, self.seed,
                                             self.num_replicas, self.rank, self.drop_last,
                                             self.shard_samples, epoch)

    def __iter__(self):
        return iter(self._indices(self.epoch))

    def __len__(self):
        if self.drop_last:
            return self.size // self.num_replicas
        return -(-self.size // self.num_replicas)
