#!/usr/bin/env python3
"""What packing photos with mploader-pack buys: whole shuffled epochs of the ImageNet training
augmentation (RandomResizedCrop(224), RandomHorizontalFlip, ToTensor) over the raw photos and
over their pack, beside torchvision on the packed images, the libjpeg-turbo decode limit, and
mploader-pack's own rate and resume:

    .venv/bin/python bench/packed_images.py --photos /tmp/packbench/photos/jpeg
        [--work /tmp/packbench] [--pack-bin build/tools/mploader-pack]
        [--tv-python /tmp/tvenv/bin/python] [--workers 2] [--batch-size 32]
        [--warmup-epochs 1] [--epochs 1] [--max-side 512] [--quality 90] [--shard-size 4MB]
        [--lock /tmp/mploader-build.lock] [--rounds 1]

Run it with a Python that has the mploader package; --tv-python is a venv with torchvision
(and PIL with libjpeg-turbo). Measured, each in its own process under `flock --lock` (the
lock the builds take, so that no compile runs during a measurement):

 1. mploader.vision.ImageFolder over the raw photos (mploader.DataLoader, shuffle on), and
    with full_decode=True (it decodes only the crop's region at a DCT scale otherwise);
 2. mploader.PackedShards over the pack (--max-side, --quality);
 3. torchvision's ImageFolder + torch's DataLoader over the pack's images written out as files
    (<work>/packed-files/<label>/<key>.jpg);
 4. the decode limit: one process pinned to one core decoding each file in full with PIL
    (Image.open(path).convert("RGB"), files in the page cache), packed and raw;
 5. mploader-pack's rate (--workers 2) beside one core's decode + resize (longer side to
    --max-side, BILINEAR after reduce) + encode (--quality) with PIL, times the cores; and the
    same with PIL's draft mode (decoded at a DCT scale, as mploader's decoder does);
 6. resume: mploader-pack SIGKILLed about half-way, run again, every file compared (filecmp)
    with the uninterrupted pack's.

Loader rows are images/s over --epochs epochs after --warmup-epochs (persistent workers, so
the workers' start is in the warm-up). Prints a markdown table; per core is images/s divided
by the machine's cores (--cores). With --rounds N every rate is measured N times, the
measurements of a round one after the other, and the table gives medians (min-max) and the
median of the rounds' ratios.
"""
import argparse
import filecmp
import io
import json
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FFCV_PER_CORE = 326  # FFCV's published ImageNet rate per vCPU (<=512 px, quality 90, RRC+flip)


def log(*parts):
    print("packed_images.py:", *parts, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# Children: each timed measurement is one of these, run under flock in its own process.

def loader_epochs(loader, label_of, args):
    """images/s over args.epochs epochs after args.warmup_epochs, and the first batch's shape."""
    shape, rates = None, []
    for epoch in range(args.warmup_epochs + args.epochs):
        count, start = 0, time.perf_counter()
        for batch in loader:
            labels = label_of(batch)
            count += len(labels)
            if shape is None:
                shape = list((batch["image"] if isinstance(batch, dict) else batch[0]).shape)
        seconds = time.perf_counter() - start
        if epoch >= args.warmup_epochs:
            rates.append((count, seconds))
    images = sum(c for c, _ in rates)
    return {"rate": images / sum(s for _, s in rates), "images": images, "shape": shape,
            "epoch_rates": [round(c / s, 1) for c, s in rates]}


def child_mploader(args):
    import torch
    import mploader
    from mploader import vision

    torch.set_num_threads(1)
    torch.manual_seed(0)
    transform = [vision.RandomResizedCrop(224), vision.RandomHorizontalFlip(), vision.ToTensor()]
    if args.child.startswith("mploader-folder"):
        dataset = vision.ImageFolder(args.data, transform, seed=0,
                                     full_decode=args.child == "mploader-folder-full")
    else:
        dataset = mploader.PackedShards(args.data, image_fields={"image": transform})
    loader = mploader.DataLoader(dataset, batch_size=args.batch_size, shuffle=True,
                                 num_workers=args.workers, persistent_workers=args.workers > 0)
    return loader_epochs(loader, lambda b: b["label"], args)


def child_torchvision(args):
    import torch
    from torchvision import datasets, transforms

    torch.set_num_threads(1)
    torch.manual_seed(0)
    transform = transforms.Compose([transforms.RandomResizedCrop(224),
                                    transforms.RandomHorizontalFlip(), transforms.ToTensor()])
    dataset = datasets.ImageFolder(args.data, transform)
    loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch_size, shuffle=True,
                                         num_workers=args.workers,
                                         persistent_workers=args.workers > 0)
    return loader_epochs(loader, lambda b: b[1], args)


def image_files(root):
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs
                  if f.lower().endswith((".jpg", ".jpeg")))


def child_pil(args):
    """One process on one core: PIL decodes (and for pack-limit resizes and encodes) each file."""
    from PIL import Image, features

    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    files = image_files(args.data)
    for path in files:  # into the page cache
        with open(path, "rb") as f:
            f.read()

    def decode(path):
        with Image.open(path) as im:
            return im.convert("RGB")

    def pack_one(path):
        with Image.open(path) as im:
            scale = args.max_side / max(im.size)
            size = (max(1, round(im.width * scale)), max(1, round(im.height * scale)))
            if scale < 1 and args.child == "pack-limit-draft":
                im.draft("RGB", size)  # decode at the least DCT scale that keeps >= size
            im = im.convert("RGB")
        if scale < 1:
            im = im.resize(size, Image.BILINEAR, reducing_gap=2.0)
        out = io.BytesIO()
        im.save(out, "JPEG", quality=args.quality)
        return out.tell()

    work = decode if args.child == "decode" else pack_one
    for path in files[:8]:  # warm-up
        work(path)
    start = time.perf_counter()
    for path in files:
        work(path)
    seconds = time.perf_counter() - start
    pixels = 0
    for path in files[:50]:
        with Image.open(path) as im:
            pixels += im.width * im.height
    return {"rate": len(files) / seconds, "images": len(files),
            "megapixels": pixels / min(len(files), 50) / 1e6,
            "turbo": bool(features.check_feature("libjpeg_turbo"))}


def child_timed(args):
    """Runs args.cmd; its seconds and its stderr."""
    start = time.perf_counter()
    run = subprocess.run(args.cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "rc": run.returncode, "stderr": run.stderr[-2000:],
            "stdout": run.stdout[-2000:]}


def child_kill(args):
    """Runs args.cmd, SIGKILLs it (its main process) after args.kill_after seconds; and whether
    its workers still run a second later, zombies not counted (then its group is killed)."""
    proc = subprocess.Popen(args.cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    time.sleep(args.kill_after)
    finished = proc.poll() is not None
    if not finished:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    time.sleep(1.0)
    survivors = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == proc.pid and fields[0] != "Z":  # in its group, not a zombie
                survivors.append(int(pid))
    if survivors:
        os.killpg(proc.pid, signal.SIGKILL)
        time.sleep(0.5)
    return {"finished_before_kill": finished, "workers_outliving": len(survivors),
            "rc": proc.returncode}


CHILDREN = {"mploader-folder": child_mploader, "mploader-folder-full": child_mploader,
            "mploader-packed": child_mploader, "torchvision": child_torchvision,
            "decode": child_pil, "pack-limit": child_pil, "pack-limit-draft": child_pil,
            "timed": child_timed, "kill": child_kill}


# ---------------------------------------------------------------------------------------------
# The driver.

def locked(args, python, child, data=None, cmd=None, extra=()):
    """Runs this script's ``child`` under ``flock args.lock``; its JSON answer."""
    command = ["flock", args.lock, python, os.path.abspath(__file__), "--child", child,
               "--workers", str(args.workers), "--batch-size", str(args.batch_size),
               "--warmup-epochs", str(args.warmup_epochs), "--epochs", str(args.epochs),
               "--max-side", str(args.max_side), "--quality", str(args.quality), *extra]
    if data:
        command += ["--data", data]
    if cmd:
        command += ["--", *cmd]
    log(child, data or " ".join(cmd or []))
    run = subprocess.run(command, capture_output=True, text=True)
    lines = [line for line in run.stdout.splitlines() if line.startswith("{")]
    if run.returncode != 0 or not lines:
        sys.exit(f"packed_images.py: {' '.join(command)} failed:\n{run.stderr[-3000:]}")
    answer = json.loads(lines[-1])
    log(child, {k: v for k, v in answer.items() if k not in ("stderr", "stdout")})
    return answer


def pack_cmd(args, out):
    return [args.pack_bin, args.photos, "-o", out, "--max-side", str(args.max_side),
            "--quality", str(args.quality), "--shard-size", args.shard_size,
            "--workers", str(args.workers)]


def extract(pack, out):
    """The pack's .jpg members as <out>/<label>/<key>.jpg (untimed)."""
    if os.path.isdir(out):
        shutil.rmtree(out)
    count = 0
    for name in sorted(os.listdir(pack)):
        if not name.endswith(".tar"):
            continue
        images, labels = {}, {}
        with tarfile.open(os.path.join(pack, name)) as tar:
            for member in tar:
                if not member.isfile():
                    continue
                key, _, ext = member.name.partition(".")
                data = tar.extractfile(member).read()
                if ext.endswith("jpg"):
                    images[key] = data
                elif ext.endswith("cls"):
                    labels[key] = int(data.decode().strip())
        for key, data in images.items():
            folder = os.path.join(out, str(labels[key]))
            os.makedirs(folder, exist_ok=True)
            with open(os.path.join(folder, key + ".jpg"), "wb") as f:
                f.write(data)
            count += 1
    return count


def all_files(root):
    return sorted(os.path.relpath(os.path.join(d, f), root)
                  for d, _, fs in os.walk(root) for f in fs)


def compare(a, b):
    """(equal, detail): every file of pack ``a`` is in ``b`` with the same bytes, and no other."""
    fa, fb = all_files(a), all_files(b)
    if fa != fb:
        return False, f"file lists differ: only in {a}: {sorted(set(fa) - set(fb))}, " \
                      f"only in {b}: {sorted(set(fb) - set(fa))}"
    differ = [f for f in fa if not filecmp.cmp(os.path.join(a, f), os.path.join(b, f),
                                               shallow=False)]
    if differ:
        return False, f"{len(differ)} of {len(fa)} files differ: {differ[:5]}"
    return True, f"{len(fa)} files equal"


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--photos", help="an ImageFolder of JPEG photos (bench/make_photo_set.py)")
    p.add_argument("--work", default="/tmp/packbench", help="where the packs are written")
    p.add_argument("--pack-bin", default=os.path.join(HERE, "..", "build", "tools",
                                                      "mploader-pack"))
    p.add_argument("--tv-python", default="/tmp/tvenv/bin/python",
                   help="the Python of a venv with torchvision")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--warmup-epochs", type=int, default=1)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--max-side", type=int, default=512)
    p.add_argument("--quality", type=int, default=90)
    p.add_argument("--shard-size", default="4MB",
                   help="mploader-pack --shard-size (small, so that resume has shards to keep)")
    p.add_argument("--cores", type=int, default=os.cpu_count())
    p.add_argument("--lock", default="/tmp/mploader-build.lock")
    p.add_argument("--rounds", type=int, default=1,
                   help="measure every rate this many times, interleaved, and print medians "
                        "(on a shared or virtual machine, whose speed drifts)")
    p.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    p.add_argument("--data", help=argparse.SUPPRESS)
    p.add_argument("--kill-after", type=float, help=argparse.SUPPRESS)
    p.add_argument("cmd", nargs="*", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(CHILDREN[args.child](args)), flush=True)
        return
    if not args.photos:
        p.error("give --photos")
    args.photos = os.path.abspath(args.photos)
    args.pack_bin = os.path.abspath(args.pack_bin)
    if not os.access(args.pack_bin, os.X_OK):
        p.error(f"--pack-bin: no mploader-pack at {args.pack_bin}")
    if not os.access(args.tv_python, os.X_OK):
        p.error(f"--tv-python: no Python at {args.tv_python}")
    command_line = " ".join(shlex.quote(a) for a in [sys.executable, *sys.argv])
    os.makedirs(args.work, exist_ok=True)
    pack = os.path.join(args.work, "pack")
    resumed = os.path.join(args.work, "pack-resumed")
    files = os.path.join(args.work, "packed-files")
    me = sys.executable

    raw_count = len(image_files(args.photos))
    c = args.cores

    # 5: the pack (the one read below and the resume's reference); its rate each round.
    def pack_once():
        timed = locked(args, me, "timed", cmd=pack_cmd(args, pack) + ["--overwrite"])
        if timed["rc"] != 0:
            sys.exit(f"packed_images.py: mploader-pack failed:\n{timed['stderr']}")
        return timed

    first_pack = pack_once()

    # 6: resume.
    if os.path.isdir(resumed):
        shutil.rmtree(resumed)
    kill_after = first_pack["seconds"] / 2
    killed = locked(args, me, "kill", cmd=pack_cmd(args, resumed),
                    extra=["--kill-after", f"{kill_after:.3f}"])
    again = locked(args, me, "timed", cmd=pack_cmd(args, resumed))
    match = re.search(r"resuming at sample (\d+)", again["stderr"])
    left = raw_count - int(match.group(1)) if match else raw_count
    equal, detail = compare(pack, resumed) if again["rc"] == 0 else (False, again["stderr"])
    resume_ok = equal and again["rc"] == 0 and not killed["finished_before_kill"]

    # 3's files, untimed.
    extracted = extract(pack, files)

    # Rounds of every rate, interleaved, so that a ratio compares runs close in time.
    rounds = []
    for r in range(args.rounds):
        log(f"round {r + 1} of {args.rounds}")
        timed = first_pack if r == 0 else pack_once()
        got = {"pack": {"rate": raw_count / timed["seconds"]},
               "pack_limit": locked(args, args.tv_python, "pack-limit", data=args.photos),
               "pack_draft": locked(args, args.tv_python, "pack-limit-draft", data=args.photos),
               "raw": locked(args, me, "mploader-folder", data=args.photos),
               "raw_full": locked(args, me, "mploader-folder-full", data=args.photos),
               "packed": locked(args, me, "mploader-packed", data=pack),
               "tv": locked(args, args.tv_python, "torchvision", data=files),
               "decode_packed": locked(args, args.tv_python, "decode", data=files),
               "decode_raw": locked(args, args.tv_python, "decode", data=args.photos)}
        rounds.append(got)

    def rates(key, scale=1.0):
        return [g[key]["rate"] * scale for g in rounds]

    def cell(values, fmt="{:.1f}"):
        text = fmt.format(statistics.median(values))
        if len(values) > 1:
            text += " (" + fmt.format(min(values)) + "–" + fmt.format(max(values)) + ")"
        return text

    last = rounds[-1]
    pack_bytes = sum(os.path.getsize(os.path.join(pack, f)) for f in all_files(pack))
    raw_bytes = sum(os.path.getsize(f) for f in image_files(args.photos))
    how = ("one run each" if args.rounds == 1 else
           f"{args.rounds} interleaved rounds: median (min–max); each ratio the median of the "
           "rounds' ratios")
    print(f"`{command_line}`\n")
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: {raw_count} photos "
          f"({last['decode_raw']['megapixels']:.1f} MP mean, {raw_bytes / 1e6:.0f} MB) packed to "
          f"{args.max_side} px quality {args.quality} ({extracted} images, "
          f"{last['decode_packed']['megapixels']:.2f} MP mean, {pack_bytes / 1e6:.1f} MB in "
          f"{sum(f.endswith('.tar') for f in all_files(pack))} shards of --shard-size "
          f"{args.shard_size}); RandomResizedCrop(224) + RandomHorizontalFlip + ToTensor, batch "
          f"{args.batch_size}, num_workers={args.workers}, shuffle on; images/s over "
          f"{args.epochs} epoch(s) after {args.warmup_epochs} warm-up epoch(s); {c} cores; "
          f"every measurement under `flock {args.lock}`; {how}. PIL libjpeg-turbo: "
          f"{last['decode_packed']['turbo']}.\n")
    print("| measurement | images/s | images/s per core |")
    print("|---|---:|---:|")
    rows = [
        ("1. mploader ImageFolder, raw photos", "raw", 1),
        ("1b. the same, full_decode=True (whole image at full size, as PIL)", "raw_full", 1),
        ("2. mploader PackedShards, pack", "packed", 1),
        ("3. torchvision ImageFolder + torch DataLoader, packed files", "tv", 1),
        (f"4. decode limit, packed (PIL, 1 core; ×{c} cores)", "decode_packed", c),
        (f"4. decode limit, raw photos (PIL, 1 core; ×{c} cores)", "decode_raw", c),
        (f"5. mploader-pack --workers {args.workers}", "pack", 1),
        (f"5. decode+resize+encode limit (PIL, 1 core; ×{c} cores)", "pack_limit", c),
        (f"5b. the same with DCT-scaled decode (PIL draft; ×{c} cores)", "pack_draft", c),
    ]
    for name, key, scale in rows:
        print(f"| {name} | {cell(rates(key, scale))} | {cell(rates(key, scale / c))} |")
    print(f"| 6. resume: SIGKILL after {kill_after:.1f} s, same command again | "
          f"{'ok' if resume_ok else 'FAILED'} | {left} of {raw_count} samples left |")
    print()
    print("| ratio | value | goal |")
    print("|---|---:|---|")

    def ratio(a, b, b_scale=1.0):
        return [g[a]["rate"] / (g[b]["rate"] * b_scale) for g in rounds]

    def goal(values, target):
        value = statistics.median(values)
        return f"≥{target}x: {'met' if value >= target else f'missed by {target / value:.2f}x'}"

    ratios = [
        ("packed / raw (2 / 1)", ratio("packed", "raw"), 3),
        ("packed mploader / torchvision on packed (2 / 3)", ratio("packed", "tv"), 3),
        (f"packed per core / FFCV's ~{FFCV_PER_CORE} per vCPU",
         [v / c / FFCV_PER_CORE for v in rates("packed")], None),
        ("packed per core / decode limit packed (2 / 4)", ratio("packed", "decode_packed", c),
         None),
        ("raw per core / decode limit raw (1 / 4)", ratio("raw", "decode_raw", c), None),
        ("raw full_decode per core / decode limit raw (1b / 4)",
         ratio("raw_full", "decode_raw", c), None),
        ("torchvision per core / decode limit packed (3 / 4)", ratio("tv", "decode_packed", c),
         None),
        ("pack rate / decode+resize+encode limit (5)", ratio("pack", "pack_limit", c), None),
        ("pack rate / DCT-scaled limit (5 / 5b)", ratio("pack", "pack_draft", c), None),
    ]
    for name, values, target in ratios:
        print(f"| {name} | {cell(values, '{:.2f}x')} | {goal(values, target) if target else ''} |")
    print()
    print(f"Resume: killed run finished before the kill: {killed['finished_before_kill']}; "
          f"its workers still running a second after: {killed['workers_outliving']}; resumed "
          f"run rc {again['rc']} in {again['seconds']:.1f} s (the uninterrupted pack: "
          f"{first_pack['seconds']:.1f} s), "
          f"{'said: ' + match.group(0) if match else 'printed no resume line'}; {detail}.")
    print(f"Batches: mploader {last['raw']['shape']} / {last['packed']['shape']}, torchvision "
          f"{last['tv']['shape']}.")
    print("Epoch rates (images/s), round by round: " + "; ".join(
        f"{key} " + " / ".join(str(g[key]["epoch_rates"]) for g in rounds)
        for key in ("raw", "packed", "tv")))

if __name__ == "__main__":
    main()
