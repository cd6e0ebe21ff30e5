"""mploader-bench --workload hdf5: the HDF5 files, and PyTorch's DataLoader reading them.

  h5_peers.py write <folder> <rows>       writes images.h5, images_gzip.h5 and text.h5
  h5_peers.py run <file> <fields> <workers> <batch> <seed> [--batched]

`run` reads one shuffled epoch with a DataLoader whose map-style dataset opens the file with
h5py in each worker on first use (h5py's documented fix for handles crossing a fork), and
prints one JSON line: samples, seconds (from iter() to the last batch) and a checksum of every
value (sum of the numeric fields as int64, plus the UTF-8 bytes of the text fields). With
--batched the dataset has __getitems__ (PyTorch >= 2.2 calls it with the batch's indices) and
reads the batch's rows sorted, in one fancy-indexing read per field.
"""
import json
import os
import sys
import time

import h5py
import numpy as np


def write(folder, rows):
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(0)
    # Images that compress like photos a little: smooth ramps plus noise.
    ramp = np.linspace(0, 200, 32, dtype=np.float32)
    base = ramp[None, None, :] + ramp[None, :, None] * 0.2
    images = np.empty((rows, 3, 32, 32), np.uint8)
    for start in range(0, rows, 4096):
        n = min(4096, rows - start)
        noise = rng.normal(0, 3, (n, 3, 32, 32)).astype(np.float32)
        images[start:start + n] = np.clip(base + noise, 0, 255).astype(np.uint8)
    labels = rng.integers(0, 1000, rows, dtype=np.int64)
    with h5py.File(os.path.join(folder, "images.h5.tmp"), "w") as f:
        f["images"] = images
        f["labels"] = labels
    with h5py.File(os.path.join(folder, "images_gzip.h5.tmp"), "w") as f:
        f.create_dataset("images", data=images, chunks=(min(64, rows), 3, 32, 32),
                         compression="gzip", compression_opts=4)
        f.create_dataset("labels", data=labels, chunks=(min(4096, rows),), compression="gzip")
    words = "the of and to in a is that for it as was with be by on not he this are".split()
    texts = [" ".join(rng.choice(words, int(rng.integers(40, 400)))) for _ in range(rows)]
    with h5py.File(os.path.join(folder, "text.h5.tmp"), "w") as f:
        f.create_dataset("text", data=texts, dtype=h5py.string_dtype("utf-8"))
        f["labels"] = labels
    for name in ("images.h5", "images_gzip.h5", "text.h5"):
        os.replace(os.path.join(folder, name + ".tmp"), os.path.join(folder, name))


class H5Rows:
    """Row i of each field; the file is opened in the process that first reads."""

    def __init__(self, path, fields):
        self.path, self.fields, self.file = path, fields, None
        with h5py.File(path, "r") as f:
            self.rows = len(f[fields[0]])

    def __len__(self):
        return self.rows

    def _open(self):
        if self.file is None:
            self.file = h5py.File(self.path, "r")
        return self.file

    def __getitem__(self, i):
        f = self._open()
        return {k: _value(f[k], f[k][i]) for k in self.fields}


class H5Batches(H5Rows):
    def __getitems__(self, indices):
        f = self._open()
        order = np.argsort(indices)
        rows = np.asarray(indices)[order]
        back = np.empty_like(order)
        back[order] = np.arange(len(order))
        out = {}
        for k in self.fields:
            values = f[k][rows][back]  # h5py needs increasing indices
            out[k] = _value(f[k], values)
        return [out]  # one "sample" holding the batch; collate passes it through


def _value(dataset, value):
    import torch
    if h5py.check_string_dtype(dataset.dtype) is not None:
        return value  # bytes, or an array of bytes
    return torch.from_numpy(np.asarray(value))


def checksum(batch, fields):
    total = 0
    for k in fields:
        v = batch[k]
        if isinstance(v, (list, tuple, np.ndarray)):
            total += sum(len(s) for s in v)
        else:
            total += int(v.to(dtype=__import__("torch").int64).sum())
    return total


def run(path, fields, workers, batch, seed, batched):
    import torch
    from torch.utils.data import DataLoader
    fields = fields.split(",")
    data = (H5Batches if batched else H5Rows)(path, fields)
    generator = torch.Generator().manual_seed(seed)
    if batched:
        loader = DataLoader(data, batch_size=batch, shuffle=True, num_workers=workers,
                            generator=generator, collate_fn=lambda rows: rows[0])
    else:
        loader = DataLoader(data, batch_size=batch, shuffle=True, num_workers=workers,
                            generator=generator)
    start = time.perf_counter()
    samples = total = 0
    for b in loader:
        samples += len(b["labels"])
        total += checksum(b, fields)
    seconds = time.perf_counter() - start
    print(json.dumps({"samples": samples, "seconds": seconds, "checksum": total}))


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2], int(sys.argv[3]))
    else:
        run(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]),
            "--batched" in sys.argv[7:])
