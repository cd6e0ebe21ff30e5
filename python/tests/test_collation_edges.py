"""Samples that torch's default_collate takes in its stride and a byte copy could get wrong:
mixed Python numbers, tensors of another dtype, lazy and strided views, dicts whose keys come in
another order or differ, str and bytes in one field, strings UTF-8 cannot hold, paths too long
for the engine, and sampler indices that are not integers. Each compared with torch's
DataLoader on the same dataset.
"""
import numpy as np
import pytest
import torch

from parity import (WORKERS, assert_same_batch, assert_same_epochs, error_of, make_loader,
                    outcomes)


class ListDataset(torch.utils.data.Dataset):
    def __init__(self, samples):
        self.samples = samples

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        return self.samples[index]


def first_batch(kind, samples, **kwargs):
    return next(iter(make_loader(kind, ListDataset(samples), **kwargs)))


@pytest.mark.parametrize("num_workers", WORKERS)
@pytest.mark.parametrize("labels", [[0, 1.5, 2, 3.5], [0.5, 1, 2, 3], [True, 2, False, 3],
                                    [True, False, True, True], [1, True, 2.5, False]],
                         ids=["int-first", "float-first", "bool-int", "bools", "all-kinds"])
def test_mixed_python_numbers_are_promoted_as_default_collate_promotes(labels, num_workers):
    batches = assert_same_epochs(ListDataset([{"label": x} for x in labels]), batch_size=4,
                                 num_workers=num_workers)
    assert batches[0][0]["label"].tolist() == pytest.approx([float(x) for x in labels])


@pytest.mark.parametrize("num_workers", WORKERS)
def test_python_numbers_keep_int64_range_and_float_bits(num_workers):
    samples = [(2**62 + 1, -0.0), (-(2**63), float("inf")), (7, 1e-310)]
    assert_same_epochs(ListDataset(samples), batch_size=3, num_workers=num_workers)


@pytest.mark.parametrize("num_workers", WORKERS)
def test_a_tensor_of_another_dtype_is_refused_never_truncated(num_workers):
    samples = [torch.tensor([1, 2]), torch.tensor([1.5, 2.5])]
    import mploader
    error = error_of(lambda: first_batch("mploader", samples, batch_size=2,
                                         num_workers=num_workers))
    assert isinstance(error, TypeError), error
    assert "sample 1 has a torch.float32 tensor at the sample itself, where the batch's first " \
        "sample 0 has torch.int64" in str(error), error
    if num_workers:  # torch's workers stack into a batch of sample 0's dtype, and refuse too
        assert isinstance(error_of(lambda: first_batch("torch", samples, batch_size=2,
                                                       num_workers=2)), TypeError)
    del mploader


def _views():
    z = torch.complex(torch.arange(6.0), torch.arange(6.0) + 10).reshape(2, 3)
    grid = torch.arange(12).reshape(3, 4)
    return [{"conj": z.conj(), "neg": z.conj().imag, "strided": grid.t(),
             "expanded": torch.arange(3).expand(4, 3), "offset": grid.flatten()[4:8]}
            for _ in range(3)]


@pytest.mark.parametrize("num_workers", WORKERS)
def test_lazy_and_strided_views_arrive_as_their_values(num_workers):
    # Torch's own workers cannot stack a conjugate view ("DispatchKey Conjugate doesn't
    # correspond to a device"): its in-process batch is the reference.
    expected = first_batch("torch", _views(), batch_size=3, num_workers=0)
    assert_same_batch(expected, first_batch("mploader", _views(), batch_size=3,
                                            num_workers=num_workers))
    assert expected["neg"][0].tolist() == [[-10.0, -11.0, -12.0], [-13.0, -14.0, -15.0]]


@pytest.mark.parametrize("num_workers", WORKERS)
def test_negative_numpy_strides_are_refused_as_torch_refuses_them(num_workers):
    samples = [np.arange(4)[::-1] for _ in range(2)]
    errors = [error_of(lambda kind=kind: first_batch(kind, samples, batch_size=2,
                                                     num_workers=num_workers))
              for kind in ("torch", "mploader")]
    assert type(errors[0]) is type(errors[1]), errors
    assert "negative" in str(errors[1])


@pytest.mark.parametrize("num_workers", WORKERS)
def test_dicts_follow_the_first_samples_keys_in_its_order(num_workers):
    samples = [{"a": 1, "b": "x"}, {"b": "y", "a": 2}, {"a": 3, "c": 9.5, "b": "z"},
               {"b": "w", "a": 4}]
    batches = assert_same_epochs(ListDataset(samples), batch_size=4, num_workers=num_workers)
    assert list(batches[0][0]) == ["a", "b"]


@pytest.mark.parametrize("num_workers", WORKERS)
def test_a_key_missing_from_a_later_sample_is_a_key_error(num_workers):
    samples = [{"a": 1, "b": 2}, {"a": 3}]
    results = {kind: outcomes(make_loader(kind, ListDataset(samples), batch_size=2,
                                          num_workers=num_workers), 3)
               for kind in ("torch", "mploader")}
    for kind, out in results.items():
        assert [o[0] for o in out] == ["error"], (kind, out)
        assert isinstance(out[0][1], KeyError) and "'b'" in str(out[0][1]), (kind, out)


@pytest.mark.parametrize("num_workers", WORKERS)
def test_samples_of_another_structure_name_the_place_that_differs(num_workers):
    samples = [{"img": torch.zeros(2), "meta": [1, 2]}, {"img": torch.zeros(2), "meta": [1]}]
    error = error_of(lambda: first_batch("mploader", samples, batch_size=2,
                                         num_workers=num_workers))
    assert isinstance(error, RuntimeError), error
    assert "only sample 0 has ['meta'][1] (a number)" in str(error), error


@pytest.mark.parametrize("num_workers", WORKERS)
def test_str_and_bytes_in_one_field_come_as_they_were(num_workers):
    samples = [("a", b"\xff"), (b"raw", "b\u00e9"), ("", b"")]
    assert_same_epochs(ListDataset(samples), batch_size=3, num_workers=num_workers)


@pytest.mark.parametrize("num_workers", WORKERS)
def test_strings_with_lone_surrogates_are_carried(num_workers):
    samples = [{"name": "\ud800x"}, {"name": "ok"}, {"name": "\udcff"}]
    batches = assert_same_epochs(ListDataset(samples), batch_size=3, num_workers=num_workers)
    assert batches[0][0]["name"] == ["\ud800x", "ok", "\udcff"]


@pytest.mark.parametrize("num_workers", WORKERS)
def test_surrogates_survive_a_collate_fn_too(num_workers):
    import mploader
    loader = mploader.DataLoader(ListDataset(["\ud800", "a"]), batch_size=2,
                                 num_workers=num_workers, collate_fn=lambda s: ("".join(s), s))
    assert next(iter(loader)) == ("\ud800a", ["\ud800", "a"])


@pytest.mark.parametrize("num_workers", WORKERS)
def test_paths_longer_than_the_engine_holds_are_a_value_error_naming_them(num_workers):
    deep = torch.zeros(1)
    for _ in range(60):  # "l0/" a level: 180 bytes
        deep = [deep]
    for sample, shown in (({"k" * 140: 1}, "['" + "k" * 20), (deep, "[0][0][0][0]")):
        error = error_of(lambda sample=sample: first_batch("mploader", [sample, sample],
                                                           batch_size=2, num_workers=num_workers))
        assert isinstance(error, ValueError), error
        assert "holds 127" in str(error) and shown in str(error), error


@pytest.mark.parametrize("num_workers", WORKERS)
@pytest.mark.parametrize("sampler", [[1.7, 2.2], ["a", "b"]], ids=["floats", "str-keys"])
def test_indices_that_are_not_integers_are_a_type_error(sampler, num_workers):
    samples = list(range(4))
    for kind in ("torch", "mploader"):
        error = error_of(lambda kind=kind: first_batch(kind, samples, batch_size=2,
                                                       sampler=sampler,
                                                       num_workers=num_workers))
        assert isinstance(error, TypeError), (kind, error)
    assert "the sampler list gave " + repr(sampler[0]) in str(error), error
    assert "integer" in str(error)


@pytest.mark.parametrize("num_workers", WORKERS)
def test_integer_like_indices_are_taken(num_workers):
    sampler = [np.int64(3), torch.tensor(1), 2]
    assert_same_epochs(ListDataset(list(range(4))), batch_size=3, sampler=lambda: sampler,
                       num_workers=num_workers)
