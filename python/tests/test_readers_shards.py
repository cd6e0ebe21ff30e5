"""mploader.TarShards from Python: tars written with tarfile, read through mploader.DataLoader."""
import io
import tarfile

import pytest
import torch

import mploader

SHARDS = 3
PER_SHARD = 10
N = SHARDS * PER_SHARD


def _feat(i):
    """Eight bytes that differ per sample, so that a mixed-up member shows."""
    return bytes((i * 7 + j) % 256 for j in range(8))


def _add(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def write_shards(folder, members=None):
    """SHARDS tars of PER_SHARD samples; sample i has "cls" (i as text) and "feat" (_feat(i)),
    plus what members(i) adds ({extension: bytes})."""
    folder.mkdir(exist_ok=True)
    paths = []
    for s in range(SHARDS):
        path = folder / f"shard-{s:03d}.tar"
        with tarfile.open(path, "w") as tar:
            for i in range(s * PER_SHARD, (s + 1) * PER_SHARD):
                _add(tar, f"sample{i:05d}.cls", str(i).encode())
                _add(tar, f"sample{i:05d}.feat", _feat(i))
                for ext, data in (members(i) if members else {}).items():
                    _add(tar, f"sample{i:05d}.{ext}", data)
        paths.append(str(path))
    return paths


def read_all(dataset, **loader_options):
    batches = list(mploader.DataLoader(dataset, batch_size=4, **loader_options))
    assert batches, "no batch"
    return batches


@pytest.mark.parametrize("num_workers", [0, 2])
@pytest.mark.parametrize("shuffle", [False, True])
def test_every_sample_once_with_its_values(tmp_path, num_workers, shuffle):
    paths = write_shards(tmp_path / "tars")
    data = mploader.TarShards(paths, int_keys=["cls"])
    assert len(data) == N and data.streaming
    batches = read_all(data, num_workers=num_workers, shuffle=shuffle)
    seen = []
    for b in batches:
        assert sorted(b) == ["cls", "feat"]
        assert b["cls"].dtype == torch.int64 and b["cls"].dim() == 1
        assert b["feat"].dtype == torch.uint8 and b["feat"].shape[1:] == (8,)
        for cls, feat in zip(b["cls"].tolist(), b["feat"]):
            assert bytes(feat.tolist()) == _feat(cls)
            seen.append(cls)
    assert sorted(seen) == list(range(N))
    if not shuffle and num_workers == 0:
        assert seen == list(range(N))


def test_a_folder_one_path_and_the_scan(tmp_path):
    paths = write_shards(tmp_path / "tars")
    folder = mploader.TarShards(tmp_path / "tars", int_keys=["cls"])
    assert folder.paths == paths
    assert folder.samples_per_shard == [PER_SHARD] * SHARDS
    assert mploader.shards.TarShards is mploader.TarShards
    one = mploader.TarShards(paths[1], keys=["cls"], int_keys=["cls"])
    assert len(one) == PER_SHARD
    got = torch.cat([b["cls"] for b in read_all(one)]).tolist()
    assert got == list(range(PER_SHARD, 2 * PER_SHARD))
    assert "TarShards" in repr(one)


def test_keys_keep_only_those_members(tmp_path):
    paths = write_shards(tmp_path / "tars", lambda i: {"txt": b"hello"})
    data = mploader.TarShards(paths, keys=["feat", "txt"], read_ahead=8,
                              read_ahead_bytes=1 << 20, max_pixels=1000)
    for b in read_all(data, num_workers=2):
        assert sorted(b) == ["feat", "txt"]
        assert b["txt"].dtype == torch.uint8
        assert all(bytes(row.tolist()) == b"hello" for row in b["txt"])


def test_images_decoded_and_transformed(tmp_path):
    pytest.importorskip("PIL", reason="Pillow writes the test's PNG files")
    from PIL import Image

    def png(i):
        out = io.BytesIO()
        Image.new("RGB", (5, 4), (i, 2 * i, 255 - i)).save(out, format="PNG")
        return {"png": out.getvalue()}

    paths = write_shards(tmp_path / "tars", png)
    # A batch needs one shape: a Compose must end its geometry with a crop or a fixed resize.
    same = mploader.vision.CenterCrop((4, 5))
    raw = mploader.TarShards(paths, keys=["cls", "png"], int_keys=["cls"], image_keys=["png"],
                             transform=[same])
    for b in read_all(raw, num_workers=2):
        assert b["png"].dtype == torch.uint8 and b["png"].shape[1:] == (4, 5, 3)
        for cls, image in zip(b["cls"].tolist(), b["png"]):
            assert image[0, 0].tolist() == [cls, 2 * cls, 255 - cls]
    to_tensor = mploader.TarShards(paths, keys=["cls", "png"], int_keys=["cls"],
                                   image_keys={"png": [same, mploader.vision.ToTensor()]})
    for b in read_all(to_tensor):
        assert b["png"].dtype == torch.float32 and b["png"].shape[1:] == (3, 4, 5)
        expected = torch.tensor([[c, 2 * c, 255 - c] for c in b["cls"].tolist()]) / 255
        assert torch.allclose(b["png"][:, :, 2, 3], expected.float())


def test_a_bad_sample_raises_or_is_skipped(tmp_path):
    paths = write_shards(tmp_path / "tars")
    with tarfile.open(paths[0], "a") as tar:  # a sample whose "cls" is not a number
        _add(tar, "zzz.cls", b"seven")
        _add(tar, "zzz.feat", _feat(0))
    strict = mploader.TarShards(paths, int_keys=["cls"])
    with pytest.raises(mploader.Error, match="zzz.cls"):
        read_all(strict)
    lenient = mploader.TarShards(paths, int_keys=["cls"], on_bad_sample="skip",
                                 max_consecutive_bad=2)
    got = torch.cat([b["cls"] for b in read_all(lenient)]).tolist()
    assert len(got) == N + 1 and set(got) == set(range(N))


def test_unknown_option_is_named(tmp_path):
    paths = write_shards(tmp_path / "tars")
    with pytest.raises(mploader.OptionError, match="colour") as e:
        mploader.TarShards(paths, colour="red")
    assert e.value.option == "colour" and "int_keys" in str(e.value)
    with pytest.raises(mploader.OptionError, match="bogus") as e:
        mploader.TarShards(paths, remote={"bogus": 1})
    assert e.value.option == "bogus"


@pytest.mark.parametrize("options, named", [
    ({"on_bad_sample": "sometimes"}, "on_bad_sample"),
    ({"read_ahead": -1}, "read_ahead"),
    ({"max_pixels": 0}, "max_pixels"),
    ({"keys": 5}, "keys"),
    ({"remote": "fast"}, "remote"),
    ({"remote": {"max_retries": -2}}, "remote.max_retries"),
    ({"int_keys": ["png"], "image_keys": ["png"],
      "transform": [mploader.vision.CenterCrop(2)]}, "int_keys"),
    ({"image_keys": ["png"]}, "image_keys"),  # no fixed size: a batch could not stack them
    ({"transform": []}, "transform"),
])
def test_bad_value_is_named(tmp_path, options, named):
    paths = write_shards(tmp_path / "tars")
    with pytest.raises(mploader.OptionError) as e:
        mploader.TarShards(paths, **options)
    assert e.value.option == named
    assert named.split(".")[-1] in str(e.value)


def test_missing_file_is_named(tmp_path):
    missing = str(tmp_path / "nowhere.tar")
    with pytest.raises(mploader.OptionError, match="nowhere.tar"):
        mploader.TarShards([missing])
    with pytest.raises(mploader.OptionError, match="empty-folder"):
        (tmp_path / "empty-folder").mkdir()
        mploader.TarShards(tmp_path / "empty-folder")
