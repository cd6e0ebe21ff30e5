"""Makes an ImageFolder tree for the vision tests: root/<class>/... with JPEGs and PNGs of
assorted sizes and modes, a nested folder, an upper-case extension and a file that is no image.
With --bad, adds files that cannot be loaded: truncated, empty, text named .jpg, and a PNG whose
header claims 100000 x 100000 pixels.
Usage: make_image_folder.py <root> [--bad]"""
import os
import struct
import sys
import zlib

import numpy as np
from PIL import Image


def image(rng, width, height, mode):
    pixels = rng.integers(0, 256, size=(height, width, 3), dtype=np.uint8)
    # Smooth content, so that JPEG keeps it and resampling has something to average.
    pixels = ((pixels.astype(np.uint16) + np.roll(pixels, 1, axis=1)) // 2).astype(np.uint8)
    return Image.fromarray(pixels, "RGB").convert(mode)


def huge_png(path):
    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))
    header = struct.pack(">IIBBBBB", 100000, 100000, 8, 2, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) +
                chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b""))


def main():
    root = sys.argv[1]
    bad = "--bad" in sys.argv[2:]
    rng = np.random.default_rng(7)
    sizes = [(64, 48), (300, 200), (97, 131), (256, 256), (120, 80)]
    modes = ["RGB", "L", "RGB", "RGBA", "P"]
    for c, name in enumerate(["dog", "cat", "ant"]):
        os.makedirs(os.path.join(root, name, "nested"), exist_ok=True)
        for i in range(6):
            width, height = sizes[(i + c) % len(sizes)]
            mode = modes[(i + 2 * c) % len(modes)]
            img = image(rng, width, height, mode)
            if i % 2 == 0 and mode in ("RGB", "L"):
                img.save(os.path.join(root, name, "%d.jpg" % i), quality=90)
            else:
                img.save(os.path.join(root, name, "%d.png" % i))
        image(rng, 80, 60, "RGB").save(os.path.join(root, name, "nested", "n.JPG"), "JPEG")
        with open(os.path.join(root, name, "notes.txt"), "w") as f:
            f.write("not an image\n")
    if bad:
        good = os.path.join(root, "cat", "0.jpg")
        data = open(good, "rb").read()
        with open(os.path.join(root, "cat", "1_truncated.jpg"), "wb") as f:
            f.write(data[: len(data) // 2])
        open(os.path.join(root, "dog", "1_empty.jpg"), "wb").close()
        with open(os.path.join(root, "ant", "1_text.jpg"), "w") as f:
            f.write("this is text, not a JPEG\n")
        huge_png(os.path.join(root, "ant", "2_huge.png"))


main()
