"""mploader.H5Dataset from Python: files written with h5py, read through mploader.DataLoader
with torch's samplers."""
import pytest
import torch
from torch.utils.data import DistributedSampler

import mploader

h5py = pytest.importorskip("h5py", reason="h5py writes the test's HDF5 files")
np = pytest.importorskip("numpy", reason="h5py's arrays are numpy's")

N = 23  # not a multiple of the batch size


def write_file(path, text=False, compression="gzip", **file_options):
    """Row i: /idx = i (int64), /group/x = i + [0..5] as float32 [2, 3] (chunked, gzip),
    /u16 = i (uint16), and /name = "row-i" when text."""
    with h5py.File(path, "w", **file_options) as f:
        f["idx"] = np.arange(N, dtype=np.int64)
        x = np.arange(N, dtype=np.float32)[:, None, None] + np.arange(6, dtype=np.float32)
        f.create_dataset("group/x", data=x.reshape(N, 2, 3), chunks=(4, 2, 3),
                         compression=compression)
        f["u16"] = np.arange(N, dtype=np.uint16)
        if text:
            f["name"] = np.array([f"row-{i}" for i in range(N)], dtype=h5py.string_dtype())
    return str(path)


FIELDS = {"idx": "/idx", "x": "/group/x", "u16": "/u16"}


def check_batch(b, names=("idx", "x", "u16")):
    assert list(b) == list(names)
    idx = b["idx"].tolist()
    assert b["idx"].dtype == torch.int64
    assert b["x"].dtype == torch.float32 and b["x"].shape[1:] == (2, 3)
    expected = torch.tensor(idx, dtype=torch.float32)[:, None, None] + torch.arange(6.0).view(2, 3)
    assert torch.equal(b["x"], expected)
    assert b["u16"].dtype == torch.int32 and b["u16"].tolist() == idx
    return idx


@pytest.mark.parametrize("num_workers", [0, 2])
def test_every_row_once_in_order(tmp_path, num_workers):
    data = mploader.H5Dataset(write_file(tmp_path / "d.h5"), FIELDS)
    assert len(data) == N and not data.streaming
    seen = []
    for b in mploader.DataLoader(data, batch_size=4, num_workers=num_workers):
        seen += check_batch(b)
    assert seen == list(range(N))


@pytest.mark.parametrize("num_workers", [0, 2])
def test_shuffle_gives_torchs_order(tmp_path, num_workers):
    data = mploader.H5Dataset(write_file(tmp_path / "d.h5"), FIELDS)
    torch.manual_seed(1234)
    expected = [list(b) for b in torch.utils.data.DataLoader(range(N), batch_size=5,
                                                             shuffle=True)]
    torch.manual_seed(1234)
    got = [check_batch(b) for b in mploader.DataLoader(data, batch_size=5, shuffle=True,
                                                        num_workers=num_workers)]
    assert [[int(i) for i in b] for b in expected] == got
    assert sorted(sum(got, [])) == list(range(N))
    assert sum(got, []) != list(range(N))  # it did shuffle


@pytest.mark.parametrize("num_workers", [0, 2])
def test_distributed_sampler_order(tmp_path, num_workers):
    data = mploader.H5Dataset(write_file(tmp_path / "d.h5"), FIELDS)
    everyone = []
    for rank in range(2):
        sampler = DistributedSampler(data, num_replicas=2, rank=rank, shuffle=True, seed=7)
        sampler.set_epoch(3)
        loader = mploader.DataLoader(data, batch_size=3, sampler=sampler,
                                     num_workers=num_workers)
        got = sum((check_batch(b) for b in loader), [])
        assert got == list(sampler)
        everyone += got
    assert set(everyone) == set(range(N))


def test_text_fields_and_field_forms(tmp_path):
    path = write_file(tmp_path / "t.h5", text=True)
    data = mploader.H5Dataset(path, [("idx", "/idx"), ("x", "group/x"), ("u16", "/u16"),
                                     ("name", "/name")])
    seen = []
    for b in mploader.DataLoader(data, batch_size=4, num_workers=2):
        idx = check_batch(b, ("idx", "x", "u16", "name"))
        assert b["name"] == [f"row-{i}" for i in idx]
        seen += idx
    assert seen == list(range(N))
    by_path = mploader.H5Dataset(path, ["/idx", "group/x"])
    assert [f["name"] for f in by_path.fields] == ["idx", "group_x"]
    info = {f["name"]: f for f in data.fields}
    assert info["x"]["shape"] == [N, 2, 3] and info["x"]["chunk"] == [4, 2, 3]
    assert "deflate" in info["x"]["filters"]
    assert info["u16"]["dtype"] == torch.int32 and info["name"]["text"]
    assert info["name"]["dtype"] is None
    assert mploader.hdf5.H5Dataset is mploader.H5Dataset


def test_options_by_name(tmp_path):
    # SWMR reading wants the new file format; h5py's newer libhdf5 writes a gzip filter in it
    # that the libhdf5 1.10 mploader links cannot read, so no compression here.
    path = write_file(tmp_path / "s.h5", compression=None, libver="latest")
    data = mploader.H5Dataset(path, FIELDS, chunk_cache_bytes=0, swmr_read=True,
                              probe_timeout_s=30)
    seen = sum((check_batch(b) for b in mploader.DataLoader(data, batch_size=8, num_workers=2)),
               [])
    assert seen == list(range(N))


def test_unknown_option_is_named(tmp_path):
    path = write_file(tmp_path / "d.h5")
    with pytest.raises(mploader.OptionError, match="colour") as e:
        mploader.H5Dataset(path, FIELDS, colour="red")
    assert e.value.option == "colour" and "swmr_read" in str(e.value)


@pytest.mark.parametrize("options, named", [
    ({"chunk_cache_bytes": -1}, "chunk_cache_bytes"),
    ({"probe_timeout_s": 0}, "probe_timeout_s"),
    ({"swmr_read": "yes"}, "swmr_read"),
    ({"chunk_cache_bytes": "lots"}, "chunk_cache_bytes"),
])
def test_bad_value_is_named(tmp_path, options, named):
    path = write_file(tmp_path / "d.h5")
    with pytest.raises(mploader.OptionError, match=named) as e:
        mploader.H5Dataset(path, FIELDS, **options)
    assert e.value.option == named


@pytest.mark.parametrize("fields", [{}, [("a", "/idx"), ("a", "/u16")], [("", "/idx")], [3]])
def test_bad_fields_are_named(tmp_path, fields):
    path = write_file(tmp_path / "d.h5")
    with pytest.raises(mploader.OptionError, match="fields") as e:
        mploader.H5Dataset(path, fields)
    assert e.value.option == "fields"


def test_missing_file_or_dataset_is_named(tmp_path):
    with pytest.raises(mploader.Error, match="nowhere.h5"):
        mploader.H5Dataset(tmp_path / "nowhere.h5", FIELDS)
    path = write_file(tmp_path / "d.h5")
    with pytest.raises(mploader.Error, match="/nothere") as e:
        mploader.H5Dataset(path, {"idx": "/idx", "y": "/nothere"})
    assert "idx" in str(e.value)  # it lists the datasets the file holds
    (tmp_path / "junk.h5").write_bytes(b"not hdf5")
    with pytest.raises(mploader.Error, match="junk.h5"):
        mploader.H5Dataset(tmp_path / "junk.h5", FIELDS)
