"""Writes the Parquet tests' files with pyarrow, and pyarrow's read of them as the reference.

Usage: write_parquet.py <folder> [rows]. References come from pq.read_table of each written file:
<file>.<column>.npy for numeric columns (uint16 and uint32 widened to int32 and int64, dates,
times, timestamps and durations as their stored integers, fixed-size lists as extra dimensions,
dictionaries decoded, nulls as 0), <file>.<column>.json for text and binary columns (a hex
string of each row's bytes) and variable-length lists (a list of numbers per row), the decoded
RGB pixels [rows, H, W, 3] for image columns, and <file>.<column>_valid.npy (True where the row
is not null) for every column that has a null. Prints nothing on success.
"""
import io
import json
import os
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

out = sys.argv[1]
rows = int(sys.argv[2]) if len(sys.argv) > 2 else 60
rng = np.random.default_rng(11)

# The numeric files' schema; numeric2.parquet must match it type for type.
NUMERIC = pa.schema([
    ("i8", pa.int8()), ("i16", pa.int16()), ("i32", pa.int32()), ("i64", pa.int64()),
    ("u8", pa.uint8()), ("u16", pa.uint16()), ("u32", pa.uint32()),
    ("f16", pa.float16()), ("f32", pa.float32()), ("f64", pa.float64()), ("flag", pa.bool_()),
    ("vec", pa.list_(pa.float32(), 4)), ("grid", pa.list_(pa.list_(pa.uint8(), 3), 2)),
    ("day", pa.date32()), ("ts", pa.timestamp("us")),
    ("cat_i", pa.dictionary(pa.int32(), pa.int32())),
])
# What a reference stores for each Arrow type that numpy does not hold as is.
WIDENED = {pa.uint16(): np.int32, pa.uint32(): np.int64}


def save(path, write):
    """Calls write(tmp) and moves the result to path, so no reader sees half a file."""
    write(path + ".tmp")
    os.replace(path + ".tmp", path)


def save_npy(path, array):
    def write(tmp):
        with open(tmp, "wb") as f:  # a file object, so np.save adds no ".npy" to the name
            np.save(f, np.ascontiguousarray(array))
    save(path, write)


def save_json(path, values):
    def write(tmp):
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(values, f)
    save(path, write)


def write_table(name, table, **options):
    save(os.path.join(out, name), lambda tmp: pq.write_table(table, tmp, **options))


def storage(type):
    """The numpy dtype a reference holds values of a primitive Arrow type in."""
    if type in WIDENED:
        return WIDENED[type]
    if pa.types.is_date32(type) or pa.types.is_time32(type):
        return np.int32
    if (pa.types.is_date64(type) or pa.types.is_time64(type) or pa.types.is_timestamp(type)
            or pa.types.is_duration(type)):
        return np.int64
    return type.to_pandas_dtype()


def dense(array):
    """A primitive or (nested) fixed-size list array as numpy [len, ...], nulls as 0."""
    type = array.type
    if pa.types.is_fixed_size_list(type):
        # Slots of null rows hold undefined values: flatten() would skip them, so read all
        # of them (values, sliced to this array) and zero the null rows after.
        inner = dense(array.values.slice(array.offset * type.list_size,
                                         len(array) * type.list_size))
        values = inner.reshape((len(array), type.list_size) + inner.shape[1:])
        if array.null_count:
            values[~valid(array)] = 0
        return values
    dtype = storage(type)
    cast = {np.int32: pa.int32(), np.int64: pa.int64()}.get(dtype)
    if cast is not None and type != cast:
        array = array.cast(cast)  # the stored integers (date, time, unsigned)
    if array.null_count:
        array = array.fill_null(False if pa.types.is_boolean(type) else 0)
    return array.to_numpy(zero_copy_only=False).astype(dtype)


def valid(array):
    return array.is_valid().to_numpy(zero_copy_only=False)


def reference(file, column, array):
    """Saves the reference of one column, read back by pyarrow, under out/<file>.<column>."""
    base = os.path.join(out, f"{file}.{column}")
    if pa.types.is_dictionary(array.type):
        array = array.cast(array.type.value_type)  # each chunk may have its own dictionary
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    type = array.type
    if (pa.types.is_string(type) or pa.types.is_large_string(type) or pa.types.is_binary(type)
            or pa.types.is_large_binary(type) or pa.types.is_fixed_size_binary(type)):
        texts = [b"" if v is None else v.encode("utf-8") if isinstance(v, str) else v
                 for v in array.to_pylist()]
        save_json(base + ".json", [v.hex() for v in texts])
    elif pa.types.is_list(type) or pa.types.is_large_list(type):
        save_json(base + ".json", [v or [] for v in array.to_pylist()])
    else:
        save_npy(base + ".npy", dense(array))
    if array.null_count:
        save_npy(base + "_valid.npy", valid(array))


def references(file, columns=None):
    table = pq.read_table(os.path.join(out, file + ".parquet"), columns=columns)
    for name in table.column_names:
        reference(file, name, table.column(name))


def numeric_table(n):
    info = [np.iinfo(t) for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                                  np.uint32)]
    ints = []
    for i in info:  # both ends of each range first, then values across all of it
        values = rng.integers(i.min, i.max, n, dtype=i.dtype, endpoint=True)
        values[:2] = [i.min, i.max][:n]
        ints.append(values)
    vec = rng.standard_normal((n, 4), dtype=np.float32)
    grid = rng.integers(0, 256, (n, 2, 3), dtype=np.uint8)
    days = rng.integers(-20000, 40000, n).astype(np.int32)
    micros = rng.integers(-2**50, 2**50, n, dtype=np.int64)
    columns = ints + [
        pa.array(rng.standard_normal(n).astype(np.float16)),
        pa.array(rng.standard_normal(n, dtype=np.float32)),
        pa.array(rng.standard_normal(n)),
        pa.array(rng.integers(0, 2, n).astype(bool)),
        pa.FixedSizeListArray.from_arrays(pa.array(vec.ravel()), 4),
        pa.FixedSizeListArray.from_arrays(
            pa.FixedSizeListArray.from_arrays(pa.array(grid.ravel()), 3), 2),
        pa.array(days, pa.date32()),
        pa.array(micros, pa.timestamp("us")),
        pa.array(rng.choice([-5, 0, 7, 1000], n).astype(np.int32)).dictionary_encode(),
    ]
    return pa.Table.from_arrays([pa.array(c) if isinstance(c, np.ndarray) else c
                                 for c in columns], schema=NUMERIC)


def write_numeric():
    write_table("numeric.parquet", numeric_table(rows), row_group_size=16)
    # PLAIN-encoded pages: pyarrow's default dictionary-encodes every column (numeric.parquet).
    write_table("numeric2.parquet", numeric_table(37), row_group_size=10, use_dictionary=False)
    references("numeric")
    references("numeric2")
    # The same column names, one of them stored as a wider type.
    table = numeric_table(10).select(["i32", "i64"])
    table = table.set_column(0, "i32", table.column("i32").cast(pa.int64()))
    write_table("other_types.parquet", table)


def write_text():
    words = ["", "a", "zebra", "naïve café", "日本", "é" * 3, "tab\tand\nnewline", "x" * 40]
    texts = []
    for i in range(rows):  # 0 to 200 characters, the first row empty and every 8th the longest
        length = 0 if i == 0 else 200 if i % 8 == 7 else int(rng.integers(0, 201))
        text = words[i % len(words)]
        while len(text) < length:
            text += " " + words[int(rng.integers(len(words)))]
        texts.append(text[:length])
    blobs = [bytes(rng.integers(0, 256, i % 13, dtype=np.uint8)) + b"\0" * (i % 3)
             for i in range(rows)]
    fixed = [bytes([i % 256, 0, 255, 7, (i * 31) % 256]) for i in range(rows)]
    seq = [rng.integers(-2**31, 2**31, int(rng.integers(0, 8)), dtype=np.int64).tolist()
           for _ in range(rows)]
    table = pa.table({
        "id": pa.array(np.arange(rows, dtype=np.int64)),
        "text": pa.array(texts, pa.string()),
        "blob": pa.array(blobs, pa.binary()),
        "fixed": pa.array(fixed, pa.binary(5)),
        "cat": pa.array([["red", "grün", "青"][i % 3] for i in range(rows)]).dictionary_encode(),
        "large": pa.array([t[::-1] for t in texts], pa.large_string()),
        "seq": pa.array(seq, pa.list_(pa.int32())),
    })
    write_table("text.parquet", table, row_group_size=16)
    references("text")


def write_nulls():
    x = rng.standard_normal(rows, dtype=np.float32)
    v = rng.standard_normal((rows, 3), dtype=np.float32)
    v_mask = np.arange(rows) % 7 == 3
    table = pa.table({
        "x": pa.array(x, mask=np.arange(rows) % 5 == 2),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), 3,
                                               mask=pa.array(v_mask)),
        "s": pa.array([None if i % 6 == 1 else f"row {i} ü" for i in range(rows)]),
        "seq": pa.array([None if i % 4 == 3 else list(range(i, i + i % 5)) for i in range(rows)],
                        pa.list_(pa.int64())),
        "n": pa.array(np.arange(rows, dtype=np.int32) * 3),
    })
    write_table("nulls.parquet", table, row_group_size=16)
    references("nulls")


def png(pixels):
    buffer = io.BytesIO()
    Image.fromarray(pixels, "RGB").save(buffer, format="PNG")
    return buffer.getvalue()


def write_images():
    pixels = rng.integers(0, 256, (rows, 12, 10, 3), dtype=np.uint8)  # 10 wide, 12 high
    images = [png(p) for p in pixels]
    image_type = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    table = pa.table({
        "image": pa.array([{"bytes": b, "path": f"img{i}.png"} for i, b in enumerate(images)],
                          image_type),
        "png": pa.array(images, pa.binary()),
        "label": pa.array(np.arange(rows, dtype=np.int64) % 10),
    })
    write_table("images.parquet", table, row_group_size=8)
    back = pq.read_table(os.path.join(out, "images.parquet"))
    for name, cells in [("image", [c["bytes"] for c in back.column("image").to_pylist()]),
                        ("png", back.column("png").to_pylist())]:
        decoded = [np.asarray(Image.open(io.BytesIO(c)).convert("RGB")) for c in cells]
        save_npy(os.path.join(out, f"images.{name}.npy"), np.stack(decoded))
    reference("images", "label", back.column("label"))


def write_bad():
    n = 10
    table = pa.table({
        "ok": pa.array(np.arange(n, dtype=np.int32)),
        "u64": pa.array(np.arange(n, dtype=np.uint64)),
        "dec": pa.array([f"{i}.25" for i in range(n)]).cast(pa.decimal128(10, 2)),
        "m": pa.array([[("k", i)] for i in range(n)], pa.map_(pa.string(), pa.int32())),
        "st": pa.array([{"a": i, "b": i / 2} for i in range(n)],
                       pa.struct([("a", pa.int32()), ("b", pa.float32())])),
        "ls": pa.array([["a"] * (i % 3) for i in range(n)], pa.list_(pa.string())),
    })
    write_table("bad_types.parquet", table)


def write_checksums():
    """Two row groups with page checksums, their pages PLAIN and uncompressed so that a flipped
    byte changes a value rather than failing to decompress. checksums.pages.json: per row group,
    per column, the file offset of its data page's values (found by their bytes)."""
    table = pa.table({"x": pa.array(np.arange(rows, dtype=np.int32)),
                      "y": pa.array(np.arange(rows, dtype=np.float64) / 4)})
    path = os.path.join(out, "checksums.parquet")
    write_table("checksums.parquet", table, row_group_size=(rows + 1) // 2,
                write_page_checksum=True, use_dictionary=False, compression="NONE")
    meta = pq.ParquetFile(path).metadata
    data = open(path, "rb").read()
    pages = []
    for g in range(meta.num_row_groups):
        start = sum(meta.row_group(k).num_rows for k in range(g))
        part = table.slice(start, meta.row_group(g).num_rows)
        offsets = []
        for c in range(meta.num_columns):
            chunk = meta.row_group(g).column(c)
            values = part.column(c).to_numpy().tobytes()
            at = data.find(values, chunk.data_page_offset,
                           chunk.data_page_offset + chunk.total_compressed_size)
            assert at > 0, f"row group {g} column {c}: values not found"
            offsets.append(at)
        pages.append(offsets)
    save_json(os.path.join(out, "checksums.pages.json"), pages)


try:
    os.makedirs(out, exist_ok=True)
    write_numeric()
    write_text()
    write_nulls()
    write_images()
    write_bad()
    write_checksums()
except Exception as e:  # a message, not a traceback, for the test that runs this
    sys.exit(f"write_parquet.py: {type(e).__name__}: {e}")
