"""Writes Fashion-MNIST as Parquet shards in the layout of a Hugging Face image dataset.

  fashion_mnist_to_parquet.py [--data-dir /usr/share/datasets/fashion-mnist] OUT_DIR

OUT_DIR/train-0000N-of-00003.parquet and OUT_DIR/test-00000-of-00001.parquet, written with
pyarrow, 1000 rows a row group: `image`, a struct of `bytes` (the image as a PNG file) and
`path` (as Hugging Face's Image feature stores it), and `label`, int64. examples/parquet_mlp.cc
trains from them.
"""
import argparse
import gzip
import io
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image


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


def png(pixels):
    out = io.BytesIO()
    Image.fromarray(pixels, mode="L").save(out, format="PNG")
    return out.getvalue()


def write_split(out_dir, split, images, labels, files):
    image_type = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    for k, rows in enumerate(np.array_split(np.arange(len(labels)), files)):
        table = pa.table({
            "image": pa.array([{"bytes": png(images[i]), "path": f"{split}/{i}.png"}
                               for i in rows], image_type),
            "label": pa.array(labels[rows].astype(np.int64)),
        })
        name = os.path.join(out_dir, f"{split}-{k:05d}-of-{files:05d}.parquet")
        pq.write_table(table, name + ".tmp", row_group_size=1000)
        os.replace(name + ".tmp", name)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("out_dir")
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    for split, name, files in (("train", "train", 3), ("test", "t10k", 1)):
        images = read_idx(find(args.data_dir, f"{name}-images-idx3-ubyte"), 16)
        labels = read_idx(find(args.data_dir, f"{name}-labels-idx1-ubyte"), 8)
        write_split(args.out_dir, split, images.reshape(-1, 28, 28), labels, files)
    print(f"wrote {args.out_dir}")


if __name__ == "__main__":
    main()
