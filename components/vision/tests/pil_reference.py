"""PIL's answers for the vision tests to compare with.

  pil_reference.py images <dir>
      Writes test images in many modes and formats into <dir>, and for each <name>:
      <name>.rgb (PIL's convert('RGB'), raw), <name>.size ("width height"); for JPEGs also
      <name>.draft.rgb / <name>.draft.size: PIL's DCT-scaled decode at 1/4 (draft()).
  pil_reference.py photo <path>
      A 4000 x 3000 JPEG.
  pil_reference.py resize <image> <width> <height> <left> <top> <right> <bottom> <out.rgb>
      PIL's resize of the box to width x height with BILINEAR (antialiased, as torchvision's
      PIL path), raw RGB.
"""
import io
import os
import sys

import numpy as np
from PIL import Image


def smooth(rng, width, height):
    """Random but smooth content: what photos look like to a decoder and a resampler."""
    small = rng.integers(0, 256, size=(height // 8 + 2, width // 8 + 2, 3), dtype=np.uint8)
    img = Image.fromarray(small, "RGB").resize((width, height), Image.BICUBIC)
    noise = rng.integers(-12, 13, size=(height, width, 3))
    return Image.fromarray(np.clip(np.asarray(img, dtype=np.int32) + noise, 0, 255).astype(np.uint8))


def save_reference(img_path, out_dir, name):
    with Image.open(img_path) as img:
        rgb = img.convert("RGB")
        rgb_bytes = rgb.tobytes()
        with open(os.path.join(out_dir, name + ".rgb"), "wb") as f:
            f.write(rgb_bytes)
        with open(os.path.join(out_dir, name + ".size"), "w") as f:
            f.write("%d %d" % rgb.size)
    if img_path.endswith(".jpg"):
        with Image.open(img_path) as img:
            img.draft(img.mode if img.mode in ("RGB", "L", "CMYK") else "RGB",
                      (img.size[0] // 4, img.size[1] // 4))
            rgb = img.convert("RGB")
            with open(os.path.join(out_dir, name + ".draft.rgb"), "wb") as f:
                f.write(rgb.tobytes())
            with open(os.path.join(out_dir, name + ".draft.size"), "w") as f:
                f.write("%d %d" % rgb.size)


def images(out_dir):
    rng = np.random.default_rng(3)
    base = smooth(rng, 203, 157)
    made = {
        "rgb444.jpg": lambda p: base.save(p, quality=92, subsampling=0),
        "rgb420.jpg": lambda p: base.save(p, quality=92, subsampling=2),
        "progressive.jpg": lambda p: base.save(p, quality=90, progressive=True),
        "gray.jpg": lambda p: base.convert("L").save(p, quality=90),
        "cmyk.jpg": lambda p: base.convert("CMYK").save(p, quality=95),
        "rgb.png": lambda p: base.save(p),
        "rgba.png": lambda p: base.convert("RGBA").save(p),
        "gray.png": lambda p: base.convert("L").save(p),
        "gray_alpha.png": lambda p: base.convert("LA").save(p),
        "palette.png": lambda p: base.convert("P").save(p),
        "palette_trns.png": lambda p: base.convert("P").save(p, transparency=0),
        "bilevel.png": lambda p: base.convert("1").save(p),
        "interlaced.png": lambda p: base.save(p, interlace=1),
    }
    for name, save in made.items():
        path = os.path.join(out_dir, name)
        save(path)
        save_reference(path, out_dir, name)
    # 16-bit RGB: PIL reads it as 8-bit RGB from the high bytes.
    wide = (np.asarray(base, dtype=np.uint16) * 257 + rng.integers(0, 256, size=(157, 203, 3))).astype(">u2")
    png16 = os.path.join(out_dir, "rgb16.png")
    write_png16_rgb(png16, wide)
    save_reference(png16, out_dir, "rgb16.png")
    # Every row filter (row y uses filter y % 5) in every 8-bit colour type but palette: PIL's
    # writer picks filters itself, so these are written by hand.
    pixels = np.asarray(base.convert("RGBA"), dtype=np.uint8).copy()
    pixels[..., 3] = rng.integers(0, 256, size=pixels.shape[:2])
    grey = np.asarray(base.convert("L"), dtype=np.uint8)
    for name, kind, data in (("filters_rgb.png", 2, pixels[..., :3]), ("filters_rgba.png", 6, pixels),
                             ("filters_gray.png", 0, grey[..., None]),
                             ("filters_gray_alpha.png", 4, np.stack([grey, pixels[..., 3]], -1))):
        path = os.path.join(out_dir, name)
        write_png_filtered(path, np.ascontiguousarray(data), kind)
        save_reference(path, out_dir, name)
    # Damaged but with every CRC right: row 5's filter type is 7; the image data ends a row
    # early; the image data holds a row too many.
    write_png_filtered(os.path.join(out_dir, "damaged_filter.png"), pixels, 6, bad_filter_row=5)
    write_png_filtered(os.path.join(out_dir, "damaged_short.png"), pixels, 6, rows_written=156)
    write_png_filtered(os.path.join(out_dir, "damaged_long.png"), pixels, 6, rows_written=158)


def write_png16_rgb(path, pixels):
    import struct
    import zlib
    height, width, _ = pixels.shape
    raw = b"".join(b"\0" + pixels[y].tobytes() for y in range(height))

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" +
                chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 16, 2, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def png_chunk(kind, data):
    import struct
    import zlib
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))


def filter_row(kind, row, up, bpp):
    """PNG filter `kind` (0-4) of one row of bytes, given the row above (zeros for the first)."""
    x = row.astype(np.int32)
    b = up.astype(np.int32)
    a = np.concatenate([np.zeros(bpp, np.int32), x[:-bpp]])
    c = np.concatenate([np.zeros(bpp, np.int32), b[:-bpp]])
    if kind == 0:
        pred = np.zeros_like(x)
    elif kind == 1:
        pred = a
    elif kind == 2:
        pred = b
    elif kind == 3:
        pred = (a + b) // 2
    else:
        pa, pb, pc = np.abs(b - c), np.abs(a - c), np.abs(a + b - 2 * c)
        pred = np.where((pa <= pb) & (pa <= pc), a, np.where(pb <= pc, b, c))
    return bytes([kind]) + ((x - pred) % 256).astype(np.uint8).tobytes()


def write_png_filtered(path, pixels, color_type, bad_filter_row=None, rows_written=None):
    """An 8-bit PNG whose row y is filtered with filter y % 5, its data in three IDAT chunks.
    Damaged on request: row `bad_filter_row` gets filter type 7; `rows_written` rows of data
    are written whatever the header says."""
    import struct
    import zlib
    height, width, channels = pixels.shape
    rows = pixels.reshape(height, width * channels)
    up = np.zeros(width * channels, np.uint8)
    raw = b""
    for y in range(height if rows_written is None else rows_written):
        row = filter_row(y % 5, rows[y % height], up, channels)
        raw += b"\x07" + row[1:] if y == bad_filter_row else row
        up = rows[y % height]
    data = zlib.compress(raw)
    thirds = [data[: len(data) // 3], data[len(data) // 3: 2 * len(data) // 3], data[2 * len(data) // 3:]]
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" +
                png_chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)) +
                b"".join(png_chunk(b"IDAT", part) for part in thirds) + png_chunk(b"IEND", b""))


def resize(args):
    path, width, height = args[0], int(args[1]), int(args[2])
    box = tuple(float(v) for v in args[3:7])
    with Image.open(path) as img:
        out = img.convert("RGB").resize((width, height), Image.BILINEAR, box=box)
    with open(args[7], "wb") as f:
        f.write(out.tobytes())


def photo(path):
    """A 4000 x 3000 JPEG, the size of a phone photo."""
    smooth(np.random.default_rng(5), 4000, 3000).save(path, quality=85)


if __name__ == "__main__":
    if sys.argv[1] == "images":
        images(sys.argv[2])
    elif sys.argv[1] == "photo":
        photo(sys.argv[2])
    else:
        resize(sys.argv[2:])
