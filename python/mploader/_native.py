"""What the C++ datasets made from Python share (mploader.vision.ImageFolder, TarShards, ...)."""


class NativeDatasetBase:
    """A dataset read by mploader's C++ readers: mploader.DataLoader runs it in its workers
    with no Python there. Its samples are flat dicts of tensors and strings, by the names the
    reader gives them. ``streaming``: it plans its own epochs (shards shuffled and shared out)
    instead of taking a sampler."""

    def __init__(self, native):
        self._native = native

    def __len__(self):
        return len(self._native)

    @property
    def streaming(self):
        return self._native.streaming

    def __repr__(self):
        return repr(self._native)

    def __getitem__(self, index):
        raise TypeError(f"{self._native.kind} is read by mploader.DataLoader's workers in C++; "
                        "it has no __getitem__ in Python")
