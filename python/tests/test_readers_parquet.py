"""mploader.ParquetShards from Python: files written with pyarrow, read through
mploader.DataLoader."""
import io

import pytest
import torch

import mploader

pa = pytest.importorskip("pyarrow", reason="pyarrow writes the test's Parquet files")
pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow writes the test's Parquet files")

FILES = 2
PER_FILE = 12
ROW_GROUP = 5  # row groups of 5, 5 and 2 rows: shards of different sizes
N = FILES * PER_FILE


def write_files(folder, extra=None):
    """FILES files; row i has idx (int64), x (float32 i / 2), vec (3 floats), u16 (uint16 i),
    name ("row-i"), plus what extra(rows) adds ({column: pa.array})."""
    folder.mkdir(exist_ok=True)
    paths = []
    for f in range(FILES):
        rows = list(range(f * PER_FILE, (f + 1) * PER_FILE))
        columns = {
            "idx": pa.array(rows, pa.int64()),
            "x": pa.array([i / 2 for i in rows], pa.float32()),
            "vec": pa.array([[i, i + 1, i + 2] for i in rows], pa.list_(pa.float32(), 3)),
            "u16": pa.array(rows, pa.uint16()),
            "name": pa.array([f"row-{i}" for i in rows], pa.string()),
        }
        columns.update(extra(rows) if extra else {})
        path = folder / f"part-{f}.parquet"
        pq.write_table(pa.table(columns), path, row_group_size=ROW_GROUP)
        paths.append(str(path))
    return paths


def read_all(dataset, **loader_options):
    batches = list(mploader.DataLoader(dataset, batch_size=4, **loader_options))
    assert batches, "no batch"
    return batches


@pytest.mark.parametrize("num_workers", [0, 2])
@pytest.mark.parametrize("shuffle", [False, True])
def test_every_row_once_with_its_values(tmp_path, num_workers, shuffle):
    data = mploader.ParquetShards(write_files(tmp_path / "pq"))
    assert len(data) == N and data.streaming
    seen = []
    for b in read_all(data, num_workers=num_workers, shuffle=shuffle):
        assert list(b) == ["idx", "x", "vec", "u16", "name"]
        assert b["idx"].dtype == torch.int64
        assert b["x"].dtype == torch.float32
        assert b["vec"].dtype == torch.float32 and b["vec"].shape[1:] == (3,)
        assert b["u16"].dtype == torch.int32  # widened: torch has no arithmetic on uint16
        idx = b["idx"].tolist()
        assert b["x"].tolist() == [i / 2 for i in idx]
        assert b["vec"].tolist() == [[i, i + 1, i + 2] for i in idx]
        assert b["u16"].tolist() == idx
        assert b["name"] == [f"row-{i}" for i in idx]
        seen += idx
    assert sorted(seen) == list(range(N))
    if not shuffle and num_workers == 0:
        assert seen == list(range(N))


def test_projection_folder_and_columns(tmp_path):
    paths = write_files(tmp_path / "pq")
    data = mploader.ParquetShards(tmp_path / "pq", columns=["vec", "idx"], read_ahead=16,
                                  cache_bytes=1 << 20, max_pixels=100)
    assert mploader.parquet.ParquetShards is mploader.ParquetShards
    assert [(c["name"], c["kind"], c["dtype"], c["shape"]) for c in data.columns] == [
        ("vec", "tensor", torch.float32, [3]), ("idx", "tensor", torch.int64, [])]
    seen = []
    for b in read_all(data, num_workers=2):
        assert list(b) == ["vec", "idx"]  # the declared layout: written straight into slots
        seen += b["idx"].tolist()
    assert sorted(seen) == list(range(N))
    one = mploader.ParquetShards(paths[1], columns=["idx"])
    assert torch.cat([b["idx"] for b in read_all(one)]).tolist() == list(
        range(PER_FILE, 2 * PER_FILE))


def _with_nulls(rows):
    return {"maybe": pa.array([None if i % 3 == 0 else float(i) for i in rows], pa.float64())}


def test_null_policies(tmp_path):
    paths = write_files(tmp_path / "pq", _with_nulls)
    refused = mploader.ParquetShards(paths, columns=["idx", "maybe"])
    with pytest.raises(mploader.Error, match="column .maybe. holds a null"):
        read_all(refused)
    filled = mploader.ParquetShards(paths, columns=["idx", "maybe"], nulls="fill",
                                    null_fill=-1.5)
    for b in read_all(filled, num_workers=2):
        assert b["maybe"].dtype == torch.float64
        assert b["maybe"].tolist() == [-1.5 if i % 3 == 0 else i for i in b["idx"].tolist()]
    masked = mploader.ParquetShards(paths, columns=["idx", "maybe"],
                                    column_nulls={"maybe": "mask"})
    for b in read_all(masked):
        assert b["maybe_valid"].dtype == torch.bool
        assert b["maybe_valid"].tolist() == [i % 3 != 0 for i in b["idx"].tolist()]


def test_image_column_with_a_transform(tmp_path):
    pytest.importorskip("PIL", reason="Pillow writes the test's PNG images")
    from PIL import Image

    def png(i):
        out = io.BytesIO()
        Image.new("RGB", (6, 3), (i, 100, 200)).save(out, format="PNG")
        return out.getvalue()

    paths = write_files(tmp_path / "pq", lambda rows: {"img": pa.array([png(i) for i in rows],
                                                                         pa.binary())})
    data = mploader.ParquetShards(paths, columns=["idx", "img"], image_columns=["img"],
                                  transform=[mploader.vision.CenterCrop((3, 6)),
                                             mploader.vision.ToTensor()])
    for b in read_all(data, num_workers=2):
        assert b["img"].dtype == torch.float32 and b["img"].shape[1:] == (3, 3, 6)
        expected = torch.tensor([[i, 100, 200] for i in b["idx"].tolist()]).float() / 255
        assert torch.allclose(b["img"][:, :, 1, 2], expected)


def test_unknown_option_is_named(tmp_path):
    paths = write_files(tmp_path / "pq")
    with pytest.raises(mploader.OptionError, match="colour") as e:
        mploader.ParquetShards(paths, colour="red")
    assert e.value.option == "colour" and "null_fill" in str(e.value)


@pytest.mark.parametrize("options, named", [
    ({"nulls": "sometimes"}, "nulls"),
    ({"column_nulls": {"x": "sometimes"}}, "column_nulls"),
    ({"column_nulls": {"nothere": "fill"}}, "column_nulls"),
    ({"read_ahead": -1}, "read_ahead"),
    ({"cache_bytes": -1}, "cache_bytes"),
    ({"max_pixels": 0}, "max_pixels"),
    ({"null_fill": "zero"}, "null_fill"),
    ({"columns": ["idx", "nothere"]}, "columns"),
    ({"image_columns": ["x"], "transform": [mploader.vision.CenterCrop(2)]}, "image_columns"),
    ({"image_columns": ["x"]}, "image_columns"),  # no fixed size: a batch could not stack them
    ({"transform": []}, "transform"),
])
def test_bad_value_is_named(tmp_path, options, named):
    paths = write_files(tmp_path / "pq")
    with pytest.raises(mploader.OptionError) as e:
        mploader.ParquetShards(paths, **options)
    assert e.value.option == named
    assert named in str(e.value) or "nothere" in str(e.value)


def test_missing_or_broken_file_is_named(tmp_path):
    with pytest.raises(mploader.OptionError, match="nowhere.parquet") as e:
        mploader.ParquetShards([str(tmp_path / "nowhere.parquet")])
    assert e.value.option == "paths"
    (tmp_path / "junk.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(mploader.OptionError, match="junk.parquet"):
        mploader.ParquetShards(tmp_path / "junk.parquet")
