"""mploader.vision: images decoded and transformed in C++ in the workers, with no Python there.

    loader = mploader.DataLoader(
        mploader.vision.ImageFolder("train/", [mploader.vision.RandomResizedCrop(224),
                                               mploader.vision.RandomHorizontalFlip(),
                                               mploader.vision.ToTensor(),
                                               mploader.vision.Normalize(MEAN, STD)]),
        batch_size=256, shuffle=True, num_workers=8)

The transforms take torchvision's names and arguments; torchvision's own transform objects
(a list or a transforms.Compose of the same six) are taken too. docs/images.md says what each
does and how the output compares with torchvision's.
"""
import json

from . import _C
from ._native import NativeDatasetBase

_native = _C.vision


def _size(size):
    if isinstance(size, int):
        return [size, size]
    if isinstance(size, (list, tuple)) and len(size) in (1, 2):
        return [int(size[0]), int(size[-1])]
    raise TypeError(f"mploader.vision: size must be an int or (height, width), not {size!r}")


class RandomResizedCrop:
    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0)):
        self.step = {"type": "RandomResizedCrop", "size": _size(size),
                     "scale": [float(scale[0]), float(scale[1])],
                     "ratio": [float(ratio[0]), float(ratio[1])]}


class Resize:
    """Resize(int): the shorter side to that many pixels (max_size bounds the longer one);
    Resize((h, w)): exactly that size."""

    def __init__(self, size, max_size=None):
        if isinstance(size, int) or (isinstance(size, (list, tuple)) and len(size) == 1):
            side = size if isinstance(size, int) else size[0]
            self.step = {"type": "Resize", "size": [side, side], "shorter_side": int(side)}
            if max_size is not None:
                self.step["max_size"] = int(max_size)
        else:
            self.step = {"type": "Resize", "size": _size(size)}


class CenterCrop:
    def __init__(self, size):
        self.step = {"type": "CenterCrop", "size": _size(size)}


class RandomHorizontalFlip:
    def __init__(self, p=0.5):
        self.step = {"type": "RandomHorizontalFlip", "p": float(p)}


class ToTensor:
    def __init__(self):
        self.step = {"type": "ToTensor"}


class Normalize:
    def __init__(self, mean, std):
        self.step = {"type": "Normalize", "mean": [float(m) for m in mean],
                     "std": [float(s) for s in std]}


_OURS = {c.__name__: c for c in (RandomResizedCrop, Resize, CenterCrop, RandomHorizontalFlip,
                                 ToTensor, Normalize)}


def _from_torchvision(t):
    """One of torchvision's transform objects as ours, by its class name and attributes."""
    name = type(t).__name__
    if name == "RandomResizedCrop":
        return RandomResizedCrop(t.size, t.scale, t.ratio)
    if name == "Resize":
        return Resize(t.size, getattr(t, "max_size", None))
    if name == "CenterCrop":
        return CenterCrop(t.size)
    if name == "RandomHorizontalFlip":
        return RandomHorizontalFlip(t.p)
    if name == "ToTensor":
        return ToTensor()
    if name == "Normalize":
        return Normalize(t.mean, t.std)
    raise TypeError(f"mploader.vision: the transform {name} is not one mploader runs in C++; "
                    f"it runs {', '.join(_OURS)}. Use those, or a Python Dataset for others.")


def transform_steps(transform):
    """The JSON steps of a transform: None, one transform, a list, or a Compose."""
    if transform is None:
        return []
    if hasattr(transform, "transforms") and not hasattr(transform, "step"):
        transform = transform.transforms  # torchvision's Compose
    if not isinstance(transform, (list, tuple)):
        transform = [transform]
    return [(t if hasattr(t, "step") else _from_torchvision(t)).step for t in transform]


class ImageFolder(NativeDatasetBase):
    """Images in class folders under ``root`` (or listed in ``list_file``, "<path> <label>" per
    line), each sample {"image", "label"}, decoded and transformed in C++ straight into the
    batch. Options, as ImageFolderOptions names them: on_bad_image ("raise" or "skip"),
    max_pixels, max_file_bytes, extensions, seed, cache_file, full_decode,
    max_consecutive_bad."""

    def __init__(self, root=None, transform=None, *, list_file=None, **options):
        if (root is None) == (list_file is None):
            raise TypeError("mploader.vision.ImageFolder: give root or list_file, one of them")
        steps = json.dumps(transform_steps(transform))
        super().__init__(_native.ImageFolder(None if root is None else str(root),
                                             None if list_file is None else str(list_file),
                                             steps, **options))

    @property
    def classes(self):
        """The class names, sorted: label i is classes[i]."""
        return _native.classes(self._native)
