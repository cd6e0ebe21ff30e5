"""A folder of photo-sized images for `mploader-bench --workload jpeg --data-dir`.

  make_photo_set.py <out> [--sources DIR] [--count 112] [--seed 0]

Writes <out>/jpeg/, <out>/png/ and <out>/mixed/, each an ImageFolder of 4 class folders:
`count` images of 1.1 to 4.3 megapixels, all JPEG (quality 90), all PNG, and 80 % JPEG / 20 % PNG.
Each image is a mosaic of tiles cut, at their own resolution, from real photos: scaling a photo
up would smooth it, and a smooth image decodes and compresses unlike a photo. The photos are
those in DIR, or else the colour photos that scikit-image's wheel ships (astronaut, coffee,
chelsea, motorcycle, retina, hubble, rocket, ihc), fetched with `pip download` into the bench
cache. Existing sets are kept.
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile
import zipfile

import numpy as np
from PIL import Image

SKIMAGE_PHOTOS = ["astronaut.png", "coffee.png", "chelsea.png", "motorcycle_left.png",
                  "motorcycle_right.png", "retina.jpg", "hubble_deep_field.jpg", "rocket.jpg",
                  "ihc.png"]


def cache_dir():
    if os.environ.get("MPLOADER_BENCH_CACHE"):
        return os.environ["MPLOADER_BENCH_CACHE"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return os.path.join(base, "mploader-bench")


def skimage_photos():
    folder = os.path.join(cache_dir(), "skimage-photos")
    if all(os.path.exists(os.path.join(folder, n)) for n in SKIMAGE_PHOTOS):
        return folder
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", tmp,
                        "scikit-image"], check=True)
        wheel = glob.glob(os.path.join(tmp, "scikit_image-*.whl"))
        if not wheel:
            sys.exit("make_photo_set.py: pip download scikit-image gave no wheel; pass --sources "
                     "with a folder of your own photos")
        os.makedirs(folder, exist_ok=True)
        with zipfile.ZipFile(wheel[0]) as z:
            for name in SKIMAGE_PHOTOS:
                with open(os.path.join(folder, name), "wb") as f:
                    f.write(z.read("skimage/data/" + name))
    return folder


def mosaic(photos, rng, megapixels):
    """An RGB image of about `megapixels`, 4:3 or 3:4, tiled with random cuts of `photos`."""
    landscape = rng.random() < 0.7
    width = int(round((megapixels * 1e6 * (4 / 3 if landscape else 3 / 4)) ** 0.5))
    height = int(round(megapixels * 1e6 / width))
    canvas = Image.new("RGB", (width, height))
    y = 0
    while y < height:
        x, row_height = 0, 0
        while x < width:
            photo = photos[rng.integers(len(photos))]
            tile_w = min(photo.width, width - x, int(rng.integers(photo.width // 2, photo.width + 1)))
            tile_h = min(photo.height, int(rng.integers(photo.height // 2, photo.height + 1)))
            left = int(rng.integers(0, photo.width - tile_w + 1))
            top = int(rng.integers(0, photo.height - tile_h + 1))
            tile = photo.crop((left, top, left + tile_w, top + tile_h))
            if rng.random() < 0.5:
                tile = tile.transpose(Image.FLIP_LEFT_RIGHT)
            canvas.paste(tile, (x, y))
            x += tile_w
            row_height = max(row_height, tile_h)
        y += row_height
    return canvas


def write_set(out, kind, photos, count, seed):
    folder = os.path.join(out, kind)
    if os.path.isdir(folder):
        print("kept", folder)
        return
    rng = np.random.default_rng(seed)
    tmp = folder + ".partial"
    for i in range(count):
        image = mosaic(photos, rng, float(rng.uniform(1.1, 4.3)))
        png = kind == "png" or (kind == "mixed" and i % 5 == 4)
        class_dir = os.path.join(tmp, str(i % 4))
        os.makedirs(class_dir, exist_ok=True)
        path = os.path.join(class_dir, "%04d.%s" % (i, "png" if png else "jpg"))
        image.save(path, **({} if png else {"quality": 90}))
    os.rename(tmp, folder)
    print("wrote", folder)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out")
    parser.add_argument("--sources", help="a folder of photos (JPEG or PNG) to cut tiles from")
    parser.add_argument("--count", type=int, default=112)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    sources = args.sources or skimage_photos()
    paths = sorted(p for p in glob.glob(os.path.join(sources, "*"))
                   if p.lower().endswith((".jpg", ".jpeg", ".png")))
    if not paths:
        sys.exit("make_photo_set.py: no .jpg or .png files in %s" % sources)
    photos = [Image.open(p).convert("RGB") for p in paths]
    for kind in ("jpeg", "png", "mixed"):
        write_set(args.out, kind, photos, args.count, args.seed)


if __name__ == "__main__":
    main()
