"""mploader.DataLoader against torch's: batches nested and typed as default_collate makes them,
and the same samples refused.

Ported from PyTorch's test/test_dataloader.py; parity.py says how both loaders are compared.
"""

import pytest
import torch

import parity_datasets as pds
from parity import (WORKERS, KINDS, assert_same_batch, assert_same_batches, assert_same_epochs,
                    error_of, make_loader, outcomes)



# ----------------------------------------------------------------------------------------------
# default_collate
# ----------------------------------------------------------------------------------------------

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8,
          torch.int16, torch.int32, torch.int64, torch.bool, torch.complex64]


@pytest.mark.parametrize("num_workers", WORKERS)
@pytest.mark.parametrize("dtype", DTYPES, ids=[str(d).split(".")[1] for d in DTYPES])
def test_collate_tensors_of_each_dtype(dtype, num_workers):
    expected = assert_same_epochs(pds.TensorDtypeDataset(dtype, 10), batch_size=4,
                                  num_workers=num_workers)
    assert expected[0][0].dtype == dtype and expected[0][0].shape == (4, 2, 3)


@pytest.mark.parametrize("num_workers", WORKERS)
def test_collate_tensors_of_odd_shapes_and_layouts(num_workers):
    expected = assert_same_epochs(pds.ShapedTensorDataset(9), batch_size=4,
                                  num_workers=num_workers)
    assert expected[0][0]["empty"].shape == (4, 0, 3)
    assert expected[0][0]["scalar"].shape == (4,)


@pytest.mark.parametrize("num_workers", WORKERS)
def test_collate_numpy_arrays(num_workers):
    expected = assert_same_epochs(pds.NumpyDataset(11), batch_size=4, num_workers=num_workers)
    first = expected[0][0]
    # torch's test_numpy / test_default_collate_dtype: numpy dtypes are kept.
    assert first["f64"].dtype == torch.float64 and first["f64"].shape == (4, 3, 4)
    assert first["b"].dtype == torch.bool and first["zero_d"].shape == (4,)


@pytest.mark.parametrize("num_workers", WORKERS)
def test_collate_python_and_numpy_scalars(num_workers):
    expected = assert_same_epochs(pds.PythonScalarDataset(13), batch_size=5,
                                  num_workers=num_workers)
    first = expected[0][0]
    # torch's test_default_collate_dtype: int -> int64, float -> float64, bool -> bool.
    assert first["int"].dtype == torch.int64
    assert first["float"].dtype == torch.float64
    assert first["bool"].dtype == torch.bool
    assert first["np_float32"].dtype == torch.float32
    assert first["np_int16"].dtype == torch.int16


@pytest.mark.parametrize("num_workers", WORKERS)
@pytest.mark.parametrize("dataset", ["TextDataset", "TopLevelStrDataset",
                                     "TopLevelBytesDataset"])
def test_collate_str_and_bytes(dataset, num_workers):
    expected = assert_same_epochs(getattr(pds, dataset)(), batch_size=3,
                                  num_workers=num_workers)
    first = expected[0][0]
    assert isinstance(first["text"] if isinstance(first, dict) else first, list)


@pytest.mark.parametrize("num_workers", WORKERS)
@pytest.mark.parametrize("dataset", ["NestedDataset", "TupleDataset"])
def test_collate_nested_dicts_tuples_and_lists(dataset, num_workers):
    expected = assert_same_epochs(getattr(pds, dataset)(), batch_size=4, num_workers=num_workers)
    if dataset == "NestedDataset":
        assert list(expected[0][0].keys()) == ["zeta", "alpha", "mid", 7, 3,
                                               "odd/key|with%marks"]
        assert isinstance(expected[0][0]["alpha"], list)  # a tuple becomes a list


@pytest.mark.parametrize("num_workers", WORKERS)
def test_collate_str_and_bytes_inside_tuples_and_lists(num_workers):
    expected = assert_same_epochs(pds.TextInSequenceDataset(8), batch_size=3,
                                  num_workers=num_workers)
    # default_collate transposes a sequence with zip(): its strings come back as a tuple.
    assert expected[0][0][0] == ("name0", "name1", "name2")


@pytest.mark.parametrize("num_workers", WORKERS)
@pytest.mark.parametrize("kind", sorted(pds.BadLeafDataset.KINDS))
def test_collate_refuses_what_default_collate_refuses(kind, num_workers):
    # torch's test_default_collate_bad_numpy_types and bad sequence types: a TypeError.
    errors = {k: error_of(lambda k=k: list(make_loader(k, pds.BadLeafDataset(kind),
                                                       batch_size=2, num_workers=num_workers)))
              for k in KINDS}
    assert type(errors["torch"]) is TypeError, errors["torch"]
    assert type(errors["mploader"]) is TypeError, repr(errors["mploader"])


@pytest.mark.parametrize("num_workers", WORKERS)
@pytest.mark.parametrize("dataset", ["MismatchedShapeDataset", "MismatchedListDataset"])
def test_samples_that_cannot_be_stacked(dataset, num_workers):
    results = {k: outcomes(make_loader(k, getattr(pds, dataset)(), batch_size=2,
                                       num_workers=num_workers), 10) for k in KINDS}
    assert [kind for kind, _ in results["mploader"]] == [kind for kind, _ in results["torch"]]
    for (kind, e), (_, a) in zip(results["torch"], results["mploader"]):
        if kind == "batch":
            assert_same_batch(e, a)
        else:
            assert type(e) is RuntimeError, repr(e)
            assert isinstance(a, RuntimeError), f"torch: {e!r}\nmploader: {a!r}"


@pytest.mark.parametrize("num_workers", WORKERS)
@pytest.mark.parametrize("dataset", [pds.NestedDataset(6), pds.TupleDataset(5),
                                     pds.PythonScalarDataset(5), pds.NumpyDataset(5)],
                         ids=["nested", "tuple", "scalars", "numpy"])
def test_without_batching_each_sample_comes_as_default_convert_makes_it(dataset, num_workers):
    # batch_size=None: no batches; numbers stay numbers, numpy arrays become tensors.
    epochs = assert_same_epochs(dataset, count=2, seed=3, batch_size=None, shuffle=True,
                                num_workers=num_workers)
    assert len(epochs[0]) == len(dataset)


@pytest.mark.parametrize("num_workers", WORKERS)
def test_without_batching_a_collate_fn_gets_one_sample_at_a_time(num_workers):
    assert_same_epochs(pds.PairDataset(7), batch_size=None, num_workers=num_workers,
                       collate_fn=lambda: pds.describe_one)


@pytest.mark.parametrize("num_workers", WORKERS)
def test_getitems_reads_each_batch_in_one_call(tmp_path, num_workers):
    logs = {kind: tmp_path / f"{kind}.log" for kind in KINDS}
    batches = {}
    for kind in KINDS:
        torch.manual_seed(8)
        loader = make_loader(kind, pds.GetItemsDataset(13, str(logs[kind])), batch_size=4,
                             shuffle=True, num_workers=num_workers)
        batches[kind] = list(loader)
    assert_same_batches(batches["torch"], batches["mploader"])
    calls = {kind: sorted(logs[kind].read_text().splitlines()) for kind in KINDS}
    assert len(calls["torch"]) == 4
    expected = calls["torch"]
    if num_workers:  # and the sizing process's one read of indices 0 to 3 (docs/python.md)
        expected = sorted(expected + ["0 1 2 3"])
    assert calls["mploader"] == expected
