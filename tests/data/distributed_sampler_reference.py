#!/usr/bin/env python3
"""Reference orders from torch.utils.data.DistributedSampler, for mploader's DistributedSampler.

Reads one configuration per line on stdin, "size world_size rank seed epoch shuffle drop_last"
(shuffle and drop_last are 0 or 1), and prints one JSON object per line with the configuration
and the indices PyTorch's sampler gives that rank in that epoch.

  tests/data/distributed_sampler_reference.py < configs.txt
  tests/data/distributed_sampler_reference.py --fixed > tests/data/distributed_sampler_vectors.jsonl

--fixed ignores stdin and prints the configurations the checked-in vectors were made from. The
live test in tests/test_distributed_sampler.cc feeds it many more.
"""
import json
import sys

import torch
from torch.utils.data import DistributedSampler

# size, world_size, ranks (all when None), seed, epoch, shuffle, drop_last. Small sizes with
# large worlds pad past the dataset length; drop_last with size < world gives nothing.
FIXED = [
    (10, 1, None, 0, 0, 1, 0),
    (10, 3, None, 0, 0, 1, 0),
    (10, 3, None, 0, 0, 1, 1),
    (10, 3, None, 0, 0, 0, 0),
    (10, 3, None, 0, 0, 0, 1),
    (10, 4, None, 42, 5, 1, 0),
    (10, 4, None, 42, 5, 1, 1),
    (3, 8, None, 7, 1, 1, 0),
    (3, 8, None, 7, 1, 0, 0),
    (3, 8, (0, 7), 7, 1, 1, 1),
    (1, 5, None, 0, 0, 1, 0),
    (0, 2, None, 0, 0, 1, 0),
    (17, 16, (0, 1, 15), 1234, 2, 1, 0),
    (17, 16, (0, 15), 1234, 2, 1, 1),
    (100, 7, (0, 3, 6), 2024, 9, 1, 0),
    (100, 7, (0, 6), 2024, 9, 1, 1),
    (64, 64, (0, 63), 3, 0, 1, 0),
]


def indices(size, world, rank, seed, epoch, shuffle, drop_last):
    sampler = DistributedSampler(range(size), num_replicas=world, rank=rank,
                                 shuffle=bool(shuffle), seed=seed, drop_last=bool(drop_last))
    sampler.set_epoch(epoch)
    return list(sampler)


def emit(size, world, rank, seed, epoch, shuffle, drop_last):
    print(json.dumps({"size": size, "world_size": world, "rank": rank, "seed": seed,
                      "epoch": epoch, "shuffle": bool(shuffle), "drop_last": bool(drop_last),
                      "indices": indices(size, world, rank, seed, epoch, shuffle, drop_last)},
                     separators=(",", ":")))


def main():
    if "--fixed" in sys.argv[1:]:
        for size, world, ranks, seed, epoch, shuffle, drop_last in FIXED:
            for rank in (range(world) if ranks is None else ranks):
                emit(size, world, rank, seed, epoch, shuffle, drop_last)
        return
    for line in sys.stdin:
        if line.strip():
            emit(*(int(x) for x in line.split()))


if __name__ == "__main__":
    main()
