"""Resuming on another number of ranks: every rank's state_dict() over torch's
DistributedSampler, merged by mploader.merge_states(), loaded by each rank of a larger or
smaller job: the rest of the epoch, each sample once (and the sampler's padding), every rank
as many batches."""
import collections

import pytest
import torch
from torch.utils.data import DistributedSampler

import mploader


class Numbers(torch.utils.data.Dataset):
    def __len__(self):
        return 40

    def __getitem__(self, i):
        return {"i": i}


def loader(ranks, rank, epoch, num_workers=0):
    sampler = DistributedSampler(Numbers(), num_replicas=ranks, rank=rank, shuffle=True, seed=7)
    sampler.set_epoch(epoch)
    made = mploader.DataLoader(Numbers(), batch_size=4, sampler=sampler,
                               num_workers=num_workers)
    made.set_epoch(epoch)
    return made, sampler


def saved_job(taken):
    """Two ranks stopped mid-epoch 3 after ``taken[r]`` batches: their merged state and the
    samples they had received."""
    states, received = [], []
    for rank, count in enumerate(taken):
        made, _ = loader(2, rank, 3)
        it = iter(made)
        received += [i for _ in range(count) for i in next(it)["i"].tolist()]
        states.append(made.state_dict())
    return mploader.merge_states(states), received


@pytest.mark.parametrize("new_ranks,num_workers", [(3, 0), (1, 2), (4, 2)])
def test_the_rest_of_the_epoch_is_shared_out_among_the_new_ranks(new_ranks, num_workers):
    job, received = saved_job([3, 2])
    per_rank = []
    for rank in range(new_ranks):
        made, _ = loader(new_ranks, rank, 0, num_workers)
        made.load_state_dict(job)
        per_rank.append([b["i"].tolist() for b in made])
    assert len({len(batches) for batches in per_rank}) == 1  # as many batches on every rank
    resumed = [i for batches in per_rank for b in batches for i in b]
    counts = collections.Counter(received + resumed)
    assert set(counts) == set(range(40))  # every sample of the epoch
    padding = len(resumed) - (40 - len(received))
    assert 0 <= padding < new_ranks and sum(c - 1 for c in counts.values()) == padding


def test_after_the_resumed_epoch_the_new_samplers_epochs_follow():
    job, _ = saved_job([1, 4])
    made, sampler = loader(3, 1, 0)
    made.load_state_dict(job)
    list(made)
    sampler.set_epoch(4)
    assert sorted(i for b in made for i in b["i"].tolist()) == sorted(list(sampler))


def test_a_state_mid_way_through_a_resumed_epoch_resumes_it():
    job, _ = saved_job([2, 2])
    made, _ = loader(3, 0, 0)
    made.load_state_dict(job)
    it = iter(made)
    next(it)
    state = made.state_dict()
    rest = [b["i"].tolist() for b in it]
    again, _ = loader(3, 0, 0)
    again.load_state_dict(state)
    assert [b["i"].tolist() for b in again] == rest


def test_states_that_cannot_be_merged_are_option_errors():
    made, _ = loader(2, 0, 3)
    it = iter(made)
    next(it)
    with pytest.raises(mploader.OptionError, match="not of each of the 2 ranks"):
        mploader.merge_states([made.state_dict()])
    plain = mploader.DataLoader(Numbers(), batch_size=4)
    next(iter(plain))
    with pytest.raises(mploader.OptionError, match="DistributedSampler"):
        mploader.merge_states([plain.state_dict()])
    job, _ = saved_job([1, 1])
    plain.load_state_dict(job)
    with pytest.raises(mploader.OptionError, match="DistributedSampler"):
        iter(plain)
