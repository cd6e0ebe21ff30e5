"""What the torch-parity tests share: both loaders from the same arguments, and the comparison
of what came out of them (test_parity_*.py; the datasets are in parity_datasets.py).

Each test builds both loaders from the same keyword arguments (``make_loader``), runs them the
same way (seeding torch's global generator identically before each) and compares what came out
with ``assert_same_batch``, which checks the nesting type by type: dict keys and their order,
list and tuple lengths, tensor dtypes, shapes and values, strings and bytes.
"""
import functools

import torch

KINDS = ("torch", "mploader")
WORKERS = [0, 2]


def mploader_module():
    import mploader
    return mploader


def make_loader(kind, dataset, **kwargs):
    """torch's or mploader's DataLoader over ``dataset`` with the same keyword arguments."""
    if kind == "torch":
        return torch.utils.data.DataLoader(dataset, **kwargs)
    if kind == "mploader":
        return mploader_module().DataLoader(dataset, **kwargs)
    raise AssertionError(kind)


# ----------------------------------------------------------------------------------------------
# Comparing batches
# ----------------------------------------------------------------------------------------------

def assert_same_batch(expected, actual, path="batch"):
    """``actual`` (mploader's) is what ``expected`` (torch's) is, type by type, all the way
    down: the same container types, dict keys in the same order, the same lengths, tensors of
    the same dtype, shape and values, the same str and bytes."""
    if isinstance(expected, torch.Tensor):
        assert isinstance(actual, torch.Tensor), (
            f"{path}: torch gives a Tensor, mploader a {type(actual).__name__}: {actual!r}")
        assert actual.dtype == expected.dtype, (
            f"{path}: torch gives dtype {expected.dtype}, mploader {actual.dtype}")
        assert actual.shape == expected.shape, (
            f"{path}: torch gives shape {tuple(expected.shape)}, mploader {tuple(actual.shape)}")
        assert actual.device == expected.device, (
            f"{path}: torch gives device {expected.device}, mploader {actual.device}")
        assert torch.equal(actual, expected), (
            f"{path}: the values differ:\ntorch:    {expected}\nmploader: {actual}")
        return
    assert type(actual) is type(expected), (
        f"{path}: torch gives a {type(expected).__name__}, mploader a "
        f"{type(actual).__name__}:\ntorch:    {expected!r}\nmploader: {actual!r}")
    if isinstance(expected, dict):
        assert list(actual.keys()) == list(expected.keys()), (
            f"{path}: the keys differ (in order):\ntorch:    {list(expected.keys())}\n"
            f"mploader: {list(actual.keys())}")
        for key in expected:
            assert_same_batch(expected[key], actual[key], f"{path}[{key!r}]")
    elif isinstance(expected, (list, tuple)):
        assert len(actual) == len(expected), (
            f"{path}: torch gives {len(expected)} items, mploader {len(actual)}")
        for i, (e, a) in enumerate(zip(expected, actual)):
            assert_same_batch(e, a, f"{path}[{i}]")
    elif isinstance(expected, (str, bytes, int, float, bool)):
        assert actual == expected, f"{path}: torch gives {expected!r}, mploader {actual!r}"
    else:
        raise AssertionError(f"{path}: the comparison does not know torch's "
                             f"{type(expected).__name__}")


def assert_same_batches(expected, actual, what="epoch"):
    assert len(actual) == len(expected), (
        f"{what}: torch gives {len(expected)} batches, mploader {len(actual)}")
    for i, (e, a) in enumerate(zip(expected, actual)):
        assert_same_batch(e, a, f"{what} batch {i}")


def epochs(loader, count, seed=None, between=None):
    """``count`` epochs of ``loader`` as lists of batches; torch.manual_seed(seed) first when
    ``seed`` is given; ``between(epoch)`` before each epoch (set_epoch)."""
    if seed is not None:
        torch.manual_seed(seed)
    out = []
    for epoch in range(count):
        if between is not None:
            between(epoch)
        out.append(list(loader))
    return out


def assert_same_epochs(dataset, count=1, seed=None, between=None, **kwargs):
    """Builds both loaders with ``kwargs`` (a callable value is called once per loader, for
    samplers and generators each loader must own), runs ``count`` epochs of each from the same
    seed and compares them. Returns torch's epochs. ``between(loader, epoch)``, when given,
    runs before each epoch."""
    results = {}
    for kind in KINDS:
        built = {k: (v() if callable(v) else v) for k, v in kwargs.items()}
        loader = make_loader(kind, dataset, **built)
        hook = None if between is None else functools.partial(between, loader)
        results[kind] = epochs(loader, count, seed, hook)
        del loader
    for epoch, (e, a) in enumerate(zip(results["torch"], results["mploader"])):
        assert_same_batches(e, a, f"epoch {epoch}")
    return results["torch"]


def outcomes(loader, limit):
    """One epoch as [("batch", batch) or ("error", exception)], going on after an error as
    torch's _test_error does; at most ``limit`` calls of next()."""
    out = []
    it = iter(loader)
    for _ in range(limit):
        try:
            out.append(("batch", next(it)))
        except StopIteration:
            return out
        except Exception as error:  # noqa: BLE001  (the point is to keep every error)
            out.append(("error", without_traceback(error)))
    raise AssertionError(f"no StopIteration after {limit} calls of next(): {out!r}")


def error_of(build):
    """The exception ``build()`` raises (None when it raises none)."""
    try:
        build()
    except Exception as error:  # noqa: BLE001
        return without_traceback(error)
    return None


def without_traceback(error):
    """``error`` without its traceback object, whose frames would keep the iterator and its
    workers alive until the garbage collector runs (the text of a worker's traceback is part
    of the message)."""
    error.__traceback__ = None
    error.__context__ = None
    return error
