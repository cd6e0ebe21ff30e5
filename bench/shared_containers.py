"""A dataset holding a large dict or list of Python objects, read over one shuffled epoch by
torch's DataLoader, by mploader's with the plain container, and by mploader's with SharedDict or
SharedList: each worker's private memory at the epoch's end, the machine's total (PSS), the
time to the first batch and the entries read per second. Then ns per lookup.

Each run is a fresh interpreter. Usage (from a venv with torch and mploader installed):

    python bench/shared_containers.py [--entries 1000000] [--workers 2 4] [--methods fork spawn]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import json, sys, time, torch
import mploader

def rollup(pid="self"):
    fields = {}
    for line in open(f"/proc/{pid}/smaps_rollup"):
        parts = line.split()
        if parts[0] in ("Pss:", "Private_Dirty:"):
            fields[parts[0][:-1]] = int(parts[1])
    return fields

class Reads(torch.utils.data.Dataset):
    def __init__(self, table, order, kind):
        self.table, self.order, self.kind = table, order, kind
    def __len__(self):
        return len(self.order) // 1000
    def __getitem__(self, i):
        total = 0
        for k in self.order[i * 1000:(i + 1) * 1000].tolist():
            path, label = self.table[f"scan-{k:09d}"] if self.kind == "dict" else self.table[k]
            total += len(path) + label
        m = rollup()
        return torch.tensor([torch.utils.data.get_worker_info().id, m["Private_Dirty"], m["Pss"]])

if __name__ == "__main__":
    n, kind, loader_name, container, workers, method = json.loads(sys.argv[1])
    if kind == "dict":
        table = {f"scan-{i:09d}": (f"/data/scans/{i % 977:04d}/scan-{i:09d}.nii.gz", i % 10)
                 for i in range(n)}
    else:
        table = [(f"/data/scans/{i % 977:04d}/scan-{i:09d}.nii.gz", i % 10) for i in range(n)]
    if container == "shared":
        table = (mploader.SharedDict if kind == "dict" else mploader.SharedList)(table)
    order = torch.randperm(n, generator=torch.Generator().manual_seed(0))
    module = torch.utils.data if loader_name == "torch" else mploader
    started = time.monotonic()
    loader = module.DataLoader(Reads(table, order, kind), batch_size=None, num_workers=workers,
                               multiprocessing_context=method)
    first, last = None, {}
    for sample in loader:
        first = first or time.monotonic() - started
        worker, private, pss = sample.tolist()
        last[worker] = (private, pss)
        main_pss = rollup()["Pss"] if len(last) == workers else 0
    took = time.monotonic() - started
    print(json.dumps({"private_mib": max(p for p, _ in last.values()) / 1024,
                      "pss_mib": (sum(s for _, s in last.values()) + main_pss) / 1024,
                      "first_s": first, "entries_per_s": n / took}))
"""

LOOKUPS = r"""
import random, time, mploader
n = {n}
plain = {{f"scan-{{i:09d}}": (f"/data/scans/{{i % 977:04d}}/scan-{{i:09d}}.nii.gz", i % 10)
         for i in range(n)}}
started = time.perf_counter()
shared = mploader.SharedDict(plain)
build_dict = (time.perf_counter() - started) / n * 1e6
values = list(plain.values())
started = time.perf_counter()
shared_list = mploader.SharedList(values)
build_list = (time.perf_counter() - started) / n * 1e6
keys = random.Random(0).sample(list(plain), min(n, 200_000))
rows = [random.Random(1).randrange(n) for _ in keys]
def per(f):
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter(); f(); best = min(best, time.perf_counter() - t)
    return best / len(keys) * 1e9
raws = [(plain[k][0].encode(), plain[k][1]) for k in keys]
lookup, build = per(lambda: [plain[k] for k in keys]), per(lambda: [(r.decode(), l) for r, l in raws])
shared_lookup = per(lambda: [shared[k] for k in keys])
item, shared_item = per(lambda: [values[i] for i in rows]), per(lambda: [shared_list[i] for i in rows])
print(f"| dict[key] | {{lookup:.0f}} |")
print(f"| a (str, int) built from its bytes | {{build:.0f}} |")
print(f"| SharedDict[key] | {{shared_lookup:.0f}} ({{shared_lookup / (lookup + build):.2f}}x the two above) |")
print(f"| list[i] | {{item:.0f}} |")
print(f"| SharedList[i] | {{shared_item:.0f}} ({{shared_item / (item + build):.2f}}x list[i] and building) |")
print(f"\nBuilding: SharedDict {{build_dict:.2f}} s, SharedList {{build_list:.2f}} s per million "
      f"entries; {{shared.nbytes / n:.0f}} bytes per entry.")
"""


def run(args_tuple):
    # A script, not -c: spawned workers import the main module to find its classes.
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as script:
        script.write(CHILD)
    try:
        done = subprocess.run([sys.executable, script.name, json.dumps(args_tuple)],
                              capture_output=True, text=True, timeout=3600)
    finally:
        os.unlink(script.name)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--methods", nargs="+", default=["fork", "spawn"])
    parser.add_argument("--kinds", nargs="+", default=["dict", "list"])
    parser.add_argument("--lookups-only", action="store_true", help="only the ns per lookup")
    args = parser.parse_args()
    if args.lookups_only:
        args.kinds = []
    print(f"{args.entries:,} entries, {time.strftime('%Y-%m-%d')}\n")
    if args.kinds:
        print("| container | workers | start | loader | private per worker, MiB | PSS total, MiB "
              "| first batch, s | entries/s |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for kind in args.kinds:
        for workers in args.workers:
            for method in args.methods:
                for loader, container in (("torch", "plain"), ("mploader", "plain"),
                                          ("mploader", "shared")):
                    r = run((args.entries, kind, loader, container, workers, method))
                    name = {"plain": kind, "shared": "Shared" + kind.capitalize()}[container]
                    if "error" in r:
                        print(f"| {name} | {workers} | {method} | {loader} | failed: {r['error']} |")
                        continue
                    print(f"| {name} | {workers} | {method} | {loader} | {r['private_mib']:.0f} | "
                          f"{r['pss_mib']:.0f} | {r['first_s']:.2f} | {r['entries_per_s']:,.0f} |",
                          flush=True)
    print("\n| lookup | ns |\n| --- | --- |")
    sys.stdout.flush()
    subprocess.run([sys.executable, "-c", LOOKUPS.format(n=args.entries)], check=True)


if __name__ == "__main__":
    main()
