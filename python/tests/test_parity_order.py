"""mploader.DataLoader against torch's: the same batches in the same order, epoch after epoch,
for every sampler and batch sampler, the same len(), and the same option checks.

Ported from PyTorch's test/test_dataloader.py; parity.py says how both loaders are compared.
"""
import gc

import pytest
import torch
from torch.utils.data import (BatchSampler, DistributedSampler, RandomSampler, SubsetRandomSampler, WeightedRandomSampler)

import parity_datasets as pds
from parity import (KINDS, WORKERS, assert_same_batches, assert_same_epochs, error_of, make_loader)



# ----------------------------------------------------------------------------------------------
# Sequential and shuffled batches
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("num_workers", WORKERS)
@pytest.mark.parametrize("batch_size,drop_last", [(1, False), (5, False), (5, True)])
def test_sequential_batches_match_and_outlive_the_loader(num_workers, batch_size, drop_last):
    dataset = pds.PairDataset(24)
    expected = assert_same_epochs(dataset, batch_size=batch_size, drop_last=drop_last,
                                  num_workers=num_workers)[0]
    # torch's _test_sequential: batch i holds samples i*batch_size onwards, in order.
    for i, (data, labels) in enumerate(expected):
        assert torch.equal(data, dataset.data[i * batch_size:(i + 1) * batch_size])
        assert torch.equal(labels, dataset.labels[i * batch_size:(i + 1) * batch_size])
    # Kept batches stay as they were once the loader and its workers are gone.
    loader = make_loader("mploader", dataset, batch_size=batch_size, drop_last=drop_last,
                         num_workers=num_workers)
    kept = list(loader)
    del loader
    gc.collect()
    assert_same_batches(expected, kept, "kept after the loader was deleted")


@pytest.mark.parametrize("num_workers,persistent_workers", [(0, False), (2, False), (2, True)])
def test_shuffle_gives_the_same_order_epoch_after_epoch(num_workers, persistent_workers):
    dataset = pds.IndexDataset(23)
    drawn_after = {}
    results = {}
    for kind in KINDS:
        loader = make_loader(kind, dataset, batch_size=4, shuffle=True,
                             num_workers=num_workers, persistent_workers=persistent_workers)
        torch.manual_seed(2024)
        results[kind], drawn_after[kind] = [], []
        for _ in range(3):
            results[kind].append(list(loader))
            # The loader used torch's global generator as torch's does: what comes next is
            # the same too.
            drawn_after[kind].append(torch.randint(0, 2 ** 62, (2,)).tolist())
        del loader
    for epoch in range(3):
        assert_same_batches(results["torch"][epoch], results["mploader"][epoch], f"epoch {epoch}")
        # torch's _test_shuffle: every sample once.
        seen = torch.cat(results["torch"][epoch]).tolist()
        assert sorted(seen) == list(range(23))
    # Each epoch a new permutation.
    assert torch.cat(results["torch"][0]).tolist() != torch.cat(results["torch"][1]).tolist()
    assert drawn_after["mploader"] == drawn_after["torch"]


@pytest.mark.parametrize("num_workers", WORKERS)
def test_shuffle_with_a_generator_matches_and_leaves_the_global_generator_alone(num_workers):
    dataset = pds.IndexDataset(17)
    drawn_after = {}
    results = {}
    for kind in KINDS:
        loader = make_loader(kind, dataset, batch_size=3, shuffle=True, num_workers=num_workers,
                             generator=torch.Generator().manual_seed(99))
        torch.manual_seed(5)
        results[kind] = [list(loader) for _ in range(3)]
        drawn_after[kind] = torch.randint(0, 2 ** 62, (2,)).tolist()
        del loader
    for epoch in range(3):
        assert_same_batches(results["torch"][epoch], results["mploader"][epoch], f"epoch {epoch}")
    assert drawn_after["mploader"] == drawn_after["torch"]
    torch.manual_seed(5)
    assert drawn_after["torch"] == torch.randint(0, 2 ** 62, (2,)).tolist()


@pytest.mark.parametrize("num_workers,persistent_workers", [(0, False), (2, False), (2, True)])
def test_an_epoch_left_early_then_full_epochs(num_workers, persistent_workers):
    dataset = pds.PairDataset(30)
    results = {}
    for kind in KINDS:
        loader = make_loader(kind, dataset, batch_size=4, shuffle=True,
                             num_workers=num_workers, persistent_workers=persistent_workers)
        torch.manual_seed(77)
        it = iter(loader)
        first = [next(it), next(it)]
        del it
        results[kind] = [first, list(loader), list(loader)]
        del loader
    for epoch in range(3):
        assert_same_batches(results["torch"][epoch], results["mploader"][epoch], f"epoch {epoch}")


@pytest.mark.parametrize("num_workers", WORKERS)
def test_an_exhausted_iterator_keeps_raising_stop_iteration(num_workers):
    for kind in KINDS:
        loader = make_loader(kind, pds.IndexDataset(5), batch_size=2, num_workers=num_workers)
        it = iter(loader)
        assert len(list(it)) == 3, kind
        for _ in range(2):
            with pytest.raises(StopIteration):
                next(it)


# ----------------------------------------------------------------------------------------------
# len
# ----------------------------------------------------------------------------------------------

LEN_CASES = {
    "bs1": dict(batch_size=1),
    "bs3": dict(batch_size=3),
    "bs3_drop_last": dict(batch_size=3, drop_last=True),
    "bs4_divides": dict(batch_size=4, drop_last=True),
    "bs40_more_than_the_dataset": dict(batch_size=40),
    "bs40_drop_last_none_left": dict(batch_size=40, drop_last=True),
    "shuffle_bs7": dict(batch_size=7, shuffle=True),
    "sampler_list": dict(batch_size=2, sampler=lambda: [1, 1, 2, 3, 5, 8, 13]),
    "batch_sampler_list": dict(batch_sampler=lambda: [[0, 1], [2], [3, 4, 5], [6]]),
}


@pytest.mark.parametrize("num_workers", WORKERS)
@pytest.mark.parametrize("case", sorted(LEN_CASES))
def test_len_matches(case, num_workers):
    dataset = pds.IndexDataset(20)
    lengths = {}
    for kind in KINDS:
        kwargs = {k: (v() if callable(v) else v) for k, v in LEN_CASES[case].items()}
        loader = make_loader(kind, dataset, num_workers=num_workers, **kwargs)
        torch.manual_seed(3)
        fresh = len(iter(loader))
        got = list(loader)
        lengths[kind] = (len(loader), fresh, len(got))
        del loader
    assert lengths["mploader"] == lengths["torch"], "(len(loader), len(iter), batches)"
    assert lengths["torch"][0] == lengths["torch"][2]


# ----------------------------------------------------------------------------------------------
# Samplers and batch samplers
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("num_workers", WORKERS)
@pytest.mark.parametrize("drop_last", [False, True])
def test_a_list_as_sampler(num_workers, drop_last):
    indices = [5, 3, 3, 0, 19, 7, 7, 7, 1, 12, 4]
    expected = assert_same_epochs(pds.PairDataset(20), count=2, batch_size=3,
                                  drop_last=drop_last, num_workers=num_workers,
                                  sampler=lambda: list(indices))
    assert len(expected[0]) == (3 if drop_last else 4)


@pytest.mark.parametrize("num_workers", WORKERS)
def test_a_sampler_without_len(num_workers):
    expected = assert_same_epochs(pds.IndexDataset(15), count=2, batch_size=4,
                                  num_workers=num_workers,
                                  sampler=lambda: pds.NoLenSampler(15))
    assert torch.cat(expected[0]).tolist() == [14, 12, 10, 8, 6, 4, 2, 0]


@pytest.mark.parametrize("num_workers", WORKERS)
def test_subset_random_sampler(num_workers):
    indices = [2, 4, 6, 8, 10, 12, 14, 16, 18]
    expected = assert_same_epochs(pds.IndexDataset(20), count=3, seed=11, batch_size=2,
                                  num_workers=num_workers,
                                  sampler=lambda: SubsetRandomSampler(indices))
    assert sorted(torch.cat(expected[0]).tolist()) == indices


@pytest.mark.parametrize("num_workers", WORKERS)
@pytest.mark.parametrize("replacement", [True, False])
def test_weighted_random_sampler(num_workers, replacement):
    weights = [0.1, 5.0, 0.0, 2.0, 1.0, 1.0, 3.0, 0.5, 4.0, 0.2, 1.5, 2.5]
    expected = assert_same_epochs(
        pds.IndexDataset(12), count=3, seed=13, batch_size=3, num_workers=num_workers,
        sampler=lambda: WeightedRandomSampler(weights, num_samples=10,
                                              replacement=replacement))
    assert 2 not in torch.cat(expected[0]).tolist()  # weight 0: never drawn


@pytest.mark.parametrize("num_workers,persistent_workers", [(0, False), (2, False), (2, True)])
@pytest.mark.parametrize("shuffle", [True, False])
def test_distributed_sampler_with_set_epoch(num_workers, persistent_workers, shuffle):
    dataset = pds.IndexDataset(20)

    def set_epoch(loader, epoch):
        loader.sampler.set_epoch(epoch)

    expected = assert_same_epochs(
        dataset, count=3, seed=17, between=set_epoch, batch_size=3, num_workers=num_workers,
        persistent_workers=persistent_workers,
        sampler=lambda: DistributedSampler(dataset, num_replicas=3, rank=1, shuffle=shuffle,
                                           seed=5))
    assert sum(len(b) for b in expected[0]) == 7  # ceil(20 / 3), padded
    if shuffle:
        assert torch.cat(expected[0]).tolist() != torch.cat(expected[1]).tolist()


@pytest.mark.parametrize("num_workers", WORKERS)
def test_a_list_of_lists_as_batch_sampler(num_workers):
    batches = [[0, 1, 2], [5], [7, 3, 3, 9, 11], [4, 4], [10]]
    expected = assert_same_epochs(pds.PairDataset(12), count=2, num_workers=num_workers,
                                  batch_sampler=lambda: [list(b) for b in batches])
    assert [len(b[1]) for b in expected[0]] == [3, 1, 5, 2, 1]


@pytest.mark.parametrize("num_workers", WORKERS)
def test_a_sampler_yielding_lists_as_batch_sampler(num_workers):
    expected = assert_same_epochs(pds.IndexDataset(19), count=3, seed=23,
                                  num_workers=num_workers,
                                  batch_sampler=lambda: pds.RandomChunkBatchSampler(19))
    assert [len(b) for b in expected[0]][:4] == [1, 2, 3, 1]
    assert sorted(torch.cat(expected[0]).tolist()) == list(range(19))


@pytest.mark.parametrize("num_workers", WORKERS)
def test_batch_sampler_over_a_random_sampler(num_workers):
    dataset = pds.IndexDataset(22)
    assert_same_epochs(dataset, count=3, seed=29, num_workers=num_workers,
                       batch_sampler=lambda: BatchSampler(RandomSampler(dataset), 4, True))


# ----------------------------------------------------------------------------------------------
# Options
# ----------------------------------------------------------------------------------------------

OPTION_ERRORS = {
    "sampler_and_shuffle": dict(sampler=lambda: [0, 1, 2], shuffle=True),
    "batch_sampler_and_batch_size": dict(batch_sampler=lambda: [[0, 1]], batch_size=2),
    "batch_sampler_and_shuffle": dict(batch_sampler=lambda: [[0, 1]], shuffle=True),
    "batch_sampler_and_sampler": dict(batch_sampler=lambda: [[0, 1]], sampler=lambda: [0, 1]),
    "batch_sampler_and_drop_last": dict(batch_sampler=lambda: [[0, 1]], drop_last=True),
    "negative_num_workers": dict(num_workers=-1),
    "negative_timeout": dict(timeout=-1),
    "prefetch_factor_without_workers": dict(num_workers=0, prefetch_factor=2),
    "persistent_workers_without_workers": dict(num_workers=0, persistent_workers=True),
}


@pytest.mark.parametrize("case", sorted(OPTION_ERRORS))
def test_options_torch_refuses_are_refused_with_a_value_error(case):
    errors = {}
    for kind in KINDS:
        kwargs = {k: (v() if callable(v) else v) for k, v in OPTION_ERRORS[case].items()}
        errors[kind] = error_of(lambda kind=kind, kwargs=kwargs:
                                make_loader(kind, pds.IndexDataset(6), **kwargs))
    assert type(errors["torch"]) is ValueError, repr(errors["torch"])
    assert isinstance(errors["mploader"], ValueError), repr(errors["mploader"])


OPTIONS_ACCEPTED = {
    "sampler_and_shuffle_false": dict(sampler=lambda: [4, 2, 0], shuffle=False, batch_size=2),
    "batch_sampler_with_the_defaults": dict(batch_sampler=lambda: [[0, 1], [5]], batch_size=1,
                                            shuffle=False, sampler=None, drop_last=False),
    "prefetch_factor_with_workers": dict(num_workers=2, prefetch_factor=1, batch_size=2),
    "persistent_workers_with_workers": dict(num_workers=2, persistent_workers=True,
                                            batch_size=4),
    "timeout_zero": dict(num_workers=2, timeout=0, batch_size=3),
    "fork_context": dict(num_workers=2, multiprocessing_context="fork", batch_size=3),
    "shuffle_false": dict(shuffle=False, batch_size=5, drop_last=True),
}


@pytest.mark.parametrize("case", sorted(OPTIONS_ACCEPTED))
def test_options_torch_accepts_give_the_same_batches(case):
    assert_same_epochs(pds.PairDataset(12), count=2, seed=37, **OPTIONS_ACCEPTED[case])
