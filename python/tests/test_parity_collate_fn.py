"""mploader.DataLoader against torch's with a collate_fn: it runs where the batch is made (in
the workers), and what it returns comes back as it returned it, tuples, numbers and strings
included; its exceptions keep their types.

Ported from PyTorch's test/test_dataloader.py (custom batches); parity.py says how both loaders
are compared.
"""
import pytest
import torch
from torch.utils.data import default_collate

import parity_datasets as pds
from parity import KINDS, WORKERS, assert_same_epochs, error_of, make_loader


def pad_and_list(samples):
    """Variable-length tensors padded to the longest, with the batch's names and sizes."""
    longest = max(len(s["x"]) for s in samples)
    x = torch.zeros(len(samples), longest, dtype=torch.long)
    for row, s in enumerate(samples):
        x[row, :len(s["x"])] = s["x"]
    return {"x": x, "lengths": [len(s["x"]) for s in samples],
            "names": [s["name"] for s in samples], "count": len(samples),
            "scale": 0.5, "flags": (True, b"raw"),
            "label": default_collate([s["y"] for s in samples])}


def as_tuple(samples):
    """(inputs, targets), the most common collate_fn."""
    return torch.stack([s["x"][:1] for s in samples]), torch.tensor([s["y"] for s in samples])


def as_they_are(samples):
    """The samples themselves, not batched at all."""
    return samples


class VariableLengthDataset(torch.utils.data.Dataset):
    """Sample i: 1 + (i * 7) % 13 numbers, longer batches later in the epoch than the first."""

    def __len__(self):
        return 30

    def __getitem__(self, i):
        return {"x": torch.arange(1 + (i * 7) % 13), "y": i % 3, "name": f"v{i}"}


def raise_on_big(samples):
    if len(samples) > 3:
        raise pds.ParityValueError(f"batch of {len(samples)} is too big")
    return default_collate(samples)


@pytest.mark.parametrize("num_workers", WORKERS)
@pytest.mark.parametrize("collate_fn", [pad_and_list, as_tuple, as_they_are])
def test_a_collate_fns_batches_come_back_as_it_made_them(collate_fn, num_workers):
    batches = assert_same_epochs(VariableLengthDataset(), count=2, seed=5, batch_size=4,
                                 shuffle=True, num_workers=num_workers,
                                 collate_fn=lambda: collate_fn)  # a callable is a factory there
    assert len(batches[0]) == 8


@pytest.mark.parametrize("num_workers", WORKERS)
def test_an_exception_in_collate_fn_keeps_its_type(num_workers):
    errors = {kind: error_of(lambda kind=kind: list(make_loader(
        kind, VariableLengthDataset(), batch_size=4, num_workers=num_workers,
        collate_fn=raise_on_big))) for kind in KINDS}
    for kind in KINDS:
        assert type(errors[kind]) is pds.ParityValueError, (kind, errors[kind])
        assert "batch of 4 is too big" in str(errors[kind])


def test_a_collate_fn_returning_what_cannot_travel_is_a_type_error():
    loader = make_loader("mploader", VariableLengthDataset(), batch_size=2, num_workers=2,
                         collate_fn=lambda samples: {"fn": len})
    with pytest.raises(TypeError, match="collate_fn returned a builtin_function_or_method"):
        next(iter(loader))
