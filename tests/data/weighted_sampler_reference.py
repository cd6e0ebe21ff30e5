"""PyTorch's own samplers, for the live comparison in tests/test_weighted_sampling.cc.

Reads one JSON configuration a line on stdin and prints it back with "indices": what
torch.utils.data.WeightedRandomSampler or SubsetRandomSampler yields for it, with a generator
seeded seed + epoch (mploader's convention for epoch e):
  {"kind": "weighted", "weights": [...], "num_samples": n, "replacement": true, "seed": s, "epoch": e}
  {"kind": "subset_random", "indices": [...], "seed": s, "epoch": e}
With --fixed it draws the 24 configurations of weighted_sampler_vectors.jsonl itself (the file
the tests read in every build was made by `python3 weighted_sampler_reference.py --fixed`).
"""
import json
import random
import sys

import torch
from torch.utils.data import SubsetRandomSampler, WeightedRandomSampler


def draw(config):
    g = torch.Generator()
    g.manual_seed(config["seed"] + config["epoch"])
    if config["kind"] == "weighted":
        sampler = WeightedRandomSampler(config["weights"], config["num_samples"],
                                        replacement=config["replacement"], generator=g)
    else:
        sampler = SubsetRandomSampler(config["indices"], generator=g)
    return [int(i) for i in sampler]


def fixed_configs():
    r = random.Random(7)
    for i in range(24):
        c = {"seed": r.randrange(1 << 40) if i % 4 else i, "epoch": r.randrange(20)}
        n = r.choice([1, 2, 5, 17, 64, 300])
        if i % 3 == 2:
            c.update(kind="subset_random", indices=[r.randrange(2 * n) for _ in range(n)],
                     size=2 * n)
        else:
            w = [0.0 if r.random() < 0.25 else round(r.uniform(0.01, 50), 3) for _ in range(n)]
            if not any(w):
                w[0] = 1.0
            positive = sum(1 for x in w if x > 0)
            replacement = i % 2 == 0
            c.update(kind="weighted", weights=w, replacement=replacement,
                     num_samples=r.randrange(1, 3 * n + 1) if replacement
                     else r.randrange(1, positive + 1))
        yield c


configs = fixed_configs() if sys.argv[1:] == ["--fixed"] else (
    json.loads(line) for line in sys.stdin if line.strip())
for config in configs:
    config["indices_out"] = draw(config)
    print(json.dumps(config))
