"""Writes the HDF5 tests' files with h5py, and what h5py reads back from them as the reference.

Usage: write_h5.py <folder> [rows]. Every file uses a format libhdf5 1.10 reads (h5py's default
libver 'earliest'; the SWMR file 'v110'). References: <file>.<field>.npy, h5py's read of each
numeric field (uint16 and uint32 widened to int32 and int64, as the loader reads them), and
<file>.<field>.json for string fields.
"""
import json
import os
import sys

import h5py
import numpy as np

out = sys.argv[1]
rows = int(sys.argv[2]) if len(sys.argv) > 2 else 60
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(7)


def reference(file, field, values):
    base = os.path.join(out, f"{file}.{field.strip('/').replace('/', '_')}")
    if values.dtype.kind in "SUO":
        texts = [v.decode("utf-8") if isinstance(v, bytes) else v for v in values.tolist()]
        with open(base + ".json", "w", encoding="utf-8") as f:
            json.dump(texts, f, ensure_ascii=False)
        return
    values = values.astype(np.dtype(values.dtype.str))  # an enum's metadata dropped
    if values.dtype == np.uint16:
        values = values.astype(np.int32)
    elif values.dtype == np.uint32:
        values = values.astype(np.int64)
    np.save(base + ".npy", np.ascontiguousarray(values.astype(values.dtype.newbyteorder("="))))


def write_numeric():
    colour = h5py.enum_dtype({"RED": 0, "GREEN": 1, "BLUE": 7}, basetype="i2")
    with h5py.File(os.path.join(out, "numeric.h5"), "w") as f:
        f["index"] = np.arange(rows, dtype=np.int64)
        f.create_dataset("images", data=rng.integers(0, 256, (rows, 3, 8, 8), dtype=np.uint8),
                         chunks=(4, 3, 8, 8), compression="gzip", compression_opts=4)
        f.create_dataset("f32", data=rng.standard_normal((rows, 4), dtype=np.float32),
                         chunks=(16, 4), compression="gzip", shuffle=True)
        f["f64"] = rng.standard_normal(rows)
        f["f16_be"] = rng.standard_normal((rows, 2)).astype(">f2")
        f["u16"] = rng.integers(0, 65536, (rows, 5), dtype=np.uint16)
        f["u32"] = rng.integers(0, 2**32, rows, dtype=np.uint32)
        f["i8"] = rng.integers(-128, 128, (rows, 3), dtype=np.int8)
        f["i16_be"] = rng.integers(-2**15, 2**15, rows).astype(">i2")
        f["flags"] = rng.integers(0, 2, rows).astype(bool)
        f.create_dataset("colour", data=rng.choice([0, 1, 7], rows).astype(np.int16),
                         dtype=colour)
        f.create_group("group").create_dataset(
            "nested", data=rng.integers(-1000, 1000, (rows, 2, 3), dtype=np.int32),
            chunks=(7, 2, 3), compression="gzip")
    with h5py.File(os.path.join(out, "numeric.h5"), "r") as f:
        for name in ["index", "images", "f32", "f64", "f16_be", "u16", "u32", "i8", "i16_be",
                     "flags", "colour", "group/nested"]:
            reference("numeric", name, f[name][()])


def write_strings():
    words = ["", "a", "zebra", "naïve café", "日本語のテキスト", "x" * 300, "tab\tand\nnewline"]
    texts = [words[i % len(words)] + f" #{i}" * (i % 3) for i in range(rows)]
    with h5py.File(os.path.join(out, "strings.h5"), "w") as f:
        f.create_dataset("text", data=texts, dtype=h5py.string_dtype("utf-8"))
        f.create_dataset("ascii", data=[f"id-{i:04d}".encode() for i in range(rows)],
                         dtype="S12")
        f["index"] = np.arange(rows, dtype=np.int64)
        f.create_dataset("vec", data=rng.standard_normal((rows, 3), dtype=np.float32),
                         chunks=(8, 3), compression="gzip")
    with h5py.File(os.path.join(out, "strings.h5"), "r") as f:
        for name in ["text", "ascii", "index", "vec"]:
            reference("strings", name, f[name][()])


def write_swmr():
    path = os.path.join(out, "swmr.h5")
    with h5py.File(path, "w", libver=("v110", "v110")) as f:
        d = f.create_dataset("x", shape=(0, 4), maxshape=(None, 4), chunks=(8, 4), dtype="f4")
        i = f.create_dataset("index", shape=(0,), maxshape=(None,), chunks=(8,), dtype="i8")
        f.swmr_mode = True
        for start in range(0, rows, 13):  # appended in steps, flushed each time
            n = min(13, rows - start)
            d.resize((start + n, 4))
            d[start:] = rng.standard_normal((n, 4), dtype=np.float32)
            i.resize((start + n,))
            i[start:] = np.arange(start, start + n)
            d.flush()
            i.flush()
    with h5py.File(path, "r", libver=("v110", "v110"), swmr=True) as f:
        reference("swmr", "x", f["x"][()])
        reference("swmr", "index", f["index"][()])


def write_bad():
    with h5py.File(os.path.join(out, "bad.h5"), "w") as f:
        f["a"] = np.arange(10)
        f["b"] = np.arange(11)
        f["scalar"] = 3
        f["u64"] = np.arange(10, dtype=np.uint64)
        f["pairs"] = np.zeros(10, dtype=[("x", "i4"), ("y", "f4")])
        f["strings2d"] = np.array([[b"a", b"b"]] * 10)
        f.create_dataset("lzf", data=np.arange(10), compression="lzf")
    with open(os.path.join(out, "not_hdf5.h5"), "wb") as f:
        f.write(b"this is not an HDF5 file, only text long enough to look like one" * 20)
    data = open(os.path.join(out, "numeric.h5"), "rb").read()
    with open(os.path.join(out, "truncated.h5"), "wb") as f:
        f.write(data[: len(data) * 2 // 3])


def write_chunks():
    """chunks.h5: /x, 512 rows of 64-row gzip chunks, and /index. damaged_chunk.h5: the same
    bytes with every byte of /x's chunk 5 (rows 320 to 383) set to 0xff, so it does not
    inflate; all else reads as in chunks.h5."""
    n = 512
    path = os.path.join(out, "chunks.h5")
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=rng.standard_normal((n, 16), dtype=np.float32),
                         chunks=(64, 16), compression="gzip")
        f["index"] = np.arange(n, dtype=np.int64)
        chunk = f["x"].id.get_chunk_info(5)
        assert chunk.chunk_offset == (320, 0), chunk
    data = bytearray(open(path, "rb").read())
    data[chunk.byte_offset:chunk.byte_offset + chunk.size] = b"\xff" * chunk.size
    with open(os.path.join(out, "damaged_chunk.h5"), "wb") as f:
        f.write(data)


write_numeric()
write_strings()
write_swmr()
write_bad()
write_chunks()
print(f"wrote the HDF5 test files ({rows} rows) in {out}")
