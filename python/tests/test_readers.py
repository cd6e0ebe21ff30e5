"""mploader's C++ readers from Python, with no Python in the workers: ImageFolder, TokenStream
and StreamMixture through mploader.DataLoader. (The components' own: test_readers_*.py.)"""
import numpy as np
import pytest
import torch
from PIL import Image

import mploader

vision = pytest.importorskip("mploader.vision", reason="mploader was built without vision")


@pytest.fixture
def image_list(tmp_path):
    """12 JPEGs of different sizes, listed with label = position, so labels name indices."""
    lines = []
    for i in range(12):
        path = tmp_path / f"img{i}.jpg"
        pixels = np.full((40 + 3 * i, 50, 3), i * 20, dtype=np.uint8)
        Image.fromarray(pixels).save(path, quality=95)
        lines.append(f"{path} {i}")
    listing = tmp_path / "list.txt"
    listing.write_text("\n".join(lines) + "\n")
    return listing


@pytest.mark.parametrize("num_workers", [0, 2])
def test_image_folder_batches_come_in_torchs_order(image_list, num_workers):
    dataset = vision.ImageFolder(list_file=image_list,
                                 transform=[vision.Resize((24, 24)), vision.ToTensor()])
    assert len(dataset) == 12
    torch.manual_seed(4)
    expected = [b.tolist() for b in torch.utils.data.DataLoader(range(12), batch_size=5,
                                                                 shuffle=True)]
    torch.manual_seed(4)
    batches = list(mploader.DataLoader(dataset, batch_size=5, shuffle=True,
                                       num_workers=num_workers))
    assert [b["label"].tolist() for b in batches] == expected
    first = batches[0]
    assert first["image"].shape == (5, 3, 24, 24) and first["image"].dtype == torch.float32
    for row, label in enumerate(first["label"].tolist()):  # each image is one grey level
        assert first["image"][row].mean().item() == pytest.approx(label * 20 / 255, abs=0.02)


class RandomResizedCrop:  # shaped as torchvision's: the same class name and attributes
    def __init__(self, size):
        self.size, self.scale, self.ratio = (size, size), (0.5, 1.0), (0.75, 1.33)


class Compose:
    def __init__(self, transforms):
        self.transforms = transforms


def test_image_folder_takes_torchvision_shaped_transforms(image_list):
    dataset = vision.ImageFolder(list_file=image_list,
                                 transform=Compose([RandomResizedCrop(16)]))
    batch = next(iter(mploader.DataLoader(dataset, batch_size=4)))
    assert batch["image"].shape == (4, 16, 16, 3) and batch["image"].dtype == torch.uint8


def test_image_folder_refuses_what_it_cannot_do(image_list, tmp_path):
    with pytest.raises(mploader.OptionError, match="unknown option 'max_pixelz'"):
        vision.ImageFolder(list_file=image_list, transform=vision.CenterCrop(8), max_pixelz=3)
    with pytest.raises(mploader.OptionError, match="on_bad_image='ignore'"):
        vision.ImageFolder(list_file=image_list, transform=vision.CenterCrop(8),
                           on_bad_image="ignore")
    with pytest.raises(TypeError, match="ColorJitter is not one mploader runs"):
        vision.ImageFolder(list_file=image_list, transform=[type("ColorJitter", (), {})()])
    with pytest.raises(mploader.OptionError, match=str(tmp_path / "absent")):
        vision.ImageFolder(tmp_path / "absent", transform=vision.CenterCrop(8))
    with pytest.raises(mploader.OptionError, match="collate_fn"):
        mploader.DataLoader(vision.ImageFolder(list_file=image_list, transform=vision.CenterCrop(8)),
                            collate_fn=lambda b: b)


def test_a_bad_image_is_skipped_and_reported(image_list, tmp_path):
    (tmp_path / "img3.jpg").write_bytes(b"not a jpeg")
    dataset = vision.ImageFolder(list_file=image_list, transform=vision.CenterCrop(20),
                                 on_bad_image="skip")
    loader = mploader.DataLoader(dataset, batch_size=4, num_workers=2)
    assert sum(len(b["label"]) for b in loader) == 12
    assert loader.stats()["skipped_samples"] == 1


def write_tokens(path, count):
    np.arange(count, dtype=np.uint16).tofile(path)
    return path


@pytest.mark.parametrize("num_workers", [0, 2])
def test_token_stream_gives_every_window_once(tmp_path, num_workers):
    files = [write_tokens(tmp_path / f"part{i}.bin", 1000 + 200 * i) for i in range(2)]
    stream = mploader.TokenStream(files, context=16, windows_per_shard=8)
    assert stream.streaming
    loader = mploader.DataLoader(stream, batch_size=4, shuffle=True, num_workers=num_workers)
    batches = list(loader)
    assert len(batches) == len(loader)
    inputs = torch.cat([b["input"] for b in batches])
    assert inputs.dtype == torch.int64 and inputs.shape[1] == 16
    assert torch.equal(torch.cat([b["target"] for b in batches])[:, :-1], inputs[:, 1:])
    assert len({tuple(row.tolist()) for row in inputs}) == len(inputs)  # no window twice


def test_token_stream_refuses_a_sampler_and_bad_options(tmp_path):
    stream = mploader.TokenStream([write_tokens(tmp_path / "t.bin", 500)], context=8)
    with pytest.raises(mploader.OptionError, match="plans its own order"):
        mploader.DataLoader(stream, sampler=range(10))
    with pytest.raises(mploader.OptionError, match="windows='overlapping'"):
        mploader.TokenStream([tmp_path / "t.bin"], windows="overlapping")
    with pytest.raises(mploader.OptionError, match="absent.bin"):
        mploader.TokenStream([tmp_path / "absent.bin"])


def test_stream_mixture_draws_from_both_sources(tmp_path):
    low = mploader.TokenStream([write_tokens(tmp_path / "a.bin", 2000)], context=8)
    np.arange(30000, 32000, dtype=np.uint16).tofile(tmp_path / "b.bin")
    high = mploader.TokenStream([tmp_path / "b.bin"], context=8)
    mixture = mploader.StreamMixture([low, high], [0.75, 0.25], num_samples=200)
    inputs = torch.cat([b["input"] for b in mploader.DataLoader(mixture, batch_size=10,
                                                                num_workers=2)])
    from_high = (inputs[:, 0] >= 30000).sum().item()
    assert len(inputs) == 200 and 25 <= from_high <= 75
