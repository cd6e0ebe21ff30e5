"""Writes Fashion-MNIST as one HDF5 file with h5py, as a Python pipeline would hand it over.

  fashion_mnist_to_h5.py [--data-dir /usr/share/datasets/fashion-mnist] OUT.h5

/train/images and /test/images: uint8 [N, 28, 28], in chunks of 64 images compressed with gzip;
/train/labels and /test/labels: int64 [N]. examples/h5_mlp.cc trains from it.
"""
import argparse
import gzip
import os

import h5py
import numpy as np


def read_idx(path, offset):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)


def find(folder, name):
    for candidate in (name, name + ".gz"):
        path = os.path.join(folder, candidate)
        if os.path.exists(path):
            return path
    raise SystemExit(f"{os.path.join(folder, name)}(.gz): no such file. Fix: --data-dir")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("out")
    args = parser.parse_args()
    with h5py.File(args.out + ".tmp", "w") as f:
        for split in ("train", "t10k"):
            images = read_idx(find(args.data_dir, f"{split}-images-idx3-ubyte"), 16)
            labels = read_idx(find(args.data_dir, f"{split}-labels-idx1-ubyte"), 8)
            group = f.create_group("train" if split == "train" else "test")
            group.create_dataset("images", data=images.reshape(-1, 28, 28), chunks=(64, 28, 28),
                                 compression="gzip")
            group.create_dataset("labels", data=labels.astype(np.int64))
    os.replace(args.out + ".tmp", args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
