"""Resuming a distributed job on another number of ranks, for loaders over torch's
DistributedSampler: the ranks' states merged into one job state, which each rank of the new
job loads; the rest of the saved epoch is then shared out among the new ranks, each sample
once (with the sampler's padding, so that every rank has as many batches), in the epoch's
global order. Later epochs are the new sampler's own.

A rank's order is DistributedSampler's: the epoch's permutation (from its seed and epoch),
padded to a multiple of the ranks, and rank r's samples at positions r, r + W, ... The job
state keeps the positions not yet delivered as ranges, so its size does not grow with the
dataset's.
"""
import json

from torch.utils.data import DistributedSampler

from ._errors import OptionError

_FIELDS = ("num_replicas", "rank", "shuffle", "seed", "drop_last", "epoch")


def sampler_facts(sampler, dataset_size, batch_size, drop_last):
    """What a state records of a DistributedSampler to merge it later; None for another
    sampler."""
    if type(sampler) is not DistributedSampler:
        return None
    facts = {name: getattr(sampler, name) for name in _FIELDS}
    facts.update(dataset_size=dataset_size, batch_size=batch_size, batches_drop_last=drop_last)
    return facts


def _order(facts, num_replicas=None, rank=None):
    """Rank ``rank``'s indices of the saved epoch, as DistributedSampler gives them."""
    sampler = DistributedSampler(range(facts["dataset_size"]),
                                 num_replicas=num_replicas or facts["num_replicas"],
                                 rank=facts["rank"] if rank is None else rank,
                                 shuffle=facts["shuffle"], seed=facts["seed"],
                                 drop_last=facts["drop_last"])
    sampler.set_epoch(facts["epoch"])
    return list(sampler)


def _delivered_positions(state):
    """The positions, in its own order, of the samples a rank's loop received."""
    facts, engine = state["distributed"], json.loads(state["engine"])
    batch = facts["batch_size"]
    count = len(_order(facts))
    for first, last in engine["delivered"]:  # batch ranges [first, last)
        for position in range(first * batch, min(last * batch, count)):
            yield position


def _refuse(what):
    raise OptionError(f"mploader: merge_states: {what}. Give the state_dict() of every rank, "
                      "taken at the same step of the same epoch.", "states")


def merge_states(states):
    """One job state from every rank's DataLoader.state_dict() (loaders over torch's
    DistributedSampler), for load_state_dict() on each rank of a job with any number of
    ranks."""
    if not states or any(not isinstance(s, dict) or "distributed" not in s for s in states):
        _refuse("each state must come from a DataLoader over torch's DistributedSampler, "
                "taken mid-epoch")
    first = states[0]["distributed"]
    ranks = sorted(s["distributed"]["rank"] for s in states)
    if ranks != list(range(first["num_replicas"])):
        _refuse(f"the states are of ranks {ranks}, not of each of the "
                f"{first['num_replicas']} ranks once")
    for s in states:
        other = s["distributed"]
        for key in ("num_replicas", "shuffle", "seed", "drop_last", "epoch", "dataset_size",
                    "batch_size", "batches_drop_last"):
            if other[key] != first[key]:
                _refuse(f"rank {other['rank']} has {key}={other[key]!r}, rank "
                        f"{first['rank']} {first[key]!r}")
    width = first["num_replicas"]
    delivered = set()
    for s in states:
        rank = s["distributed"]["rank"]
        delivered.update(rank + width * p for p in _delivered_positions(s))
    total = width * len(_order(first))
    remaining = _ranges(p for p in range(total) if p not in delivered)
    job = {key: first[key] for key in first if key != "rank"}
    return {"mploader_job_state": 1, "distributed": job, "remaining": remaining,
            "engine_seed": states[0]["engine_seed"]}


def _ranges(positions):
    out = []
    for p in positions:
        if out and out[-1][1] == p:
            out[-1][1] = p + 1
        else:
            out.append([p, p + 1])
    return out


def rank_batches(job, sampler, batch_size, drop_last):
    """This rank's batches of the rest of the saved epoch: the remaining global positions in
    order, shared out as a DistributedSampler of this job's size shares them (padded)."""
    if type(sampler) is not DistributedSampler:
        raise OptionError("mploader: load_state_dict: a job state is shared out by torch's "
                          "DistributedSampler; give the DataLoader one (with this job's "
                          "num_replicas and rank).", "sampler")
    facts = job["distributed"]
    if sampler.dataset is not None and len(sampler.dataset) != facts["dataset_size"]:
        raise OptionError(f"mploader: load_state_dict: the job state is of a dataset of "
                          f"{facts['dataset_size']} samples, this one has "
                          f"{len(sampler.dataset)}. Give the same dataset.", "state")
    width = facts["num_replicas"]
    orders = [_order(facts, rank=r) for r in range(width)]
    indices = [orders[p % width][p // width] for a, b in job["remaining"] for p in range(a, b)]
    share = -(-len(indices) // sampler.num_replicas)
    padded = (indices * (1 + share * sampler.num_replicas // max(1, len(indices))))
    mine = padded[:share * sampler.num_replicas][sampler.rank::sampler.num_replicas]
    cut = len(mine) - len(mine) % batch_size if drop_last else len(mine)
    return [mine[i:i + batch_size] for i in range(0, cut, batch_size)]
