"""Peak memory and time to the first batch of a Python dataset under start_method spawn:
mploader.DataLoader against torch's DataLoader, for a dataset that holds SIZE MiB of bytes.

Each run is a fresh interpreter in a memory cgroup of its own (cgroup v1 or v2, made under this
process's cgroup), so the peak counts the main process and every worker, shared memory
included. Usage (root, from a venv with torch and mploader installed):

    python bench/spawn_memory.py [--sizes 100 400] [--workers 2] [--rounds 1]
"""
import argparse
import os
import subprocess
import sys
import time

CHILD = r"""
import sys, time, torch, {module}
class Holder(torch.utils.data.Dataset):
    def __init__(self, mib):
        self.blob = bytes(mib << 20)  # the data a real dataset would hold
    def __len__(self):
        return 64
    def __getitem__(self, i):
        return torch.tensor([i, len(self.blob)])
if __name__ == "__main__":
    data = Holder({mib})
    started = time.monotonic()
    loader = {module}.DataLoader(data, batch_size=8, num_workers={workers},
                                 multiprocessing_context="spawn")
    first = None
    for batch in loader:
        first = first or time.monotonic() - started
    print(f"first_batch_s={{first:.2f}} epoch_s={{time.monotonic() - started:.2f}}")
"""


def own_cgroup():
    """(kind, folder) of this process's memory cgroup: ("v2", ...) or ("v1", ...)."""
    for line in open("/proc/self/cgroup"):
        number, controllers, path = line.rstrip("\n").split(":", 2)
        if number == "0" and os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
            return "v2", "/sys/fs/cgroup" + path
        if "memory" in controllers.split(","):
            return "v1", "/sys/fs/cgroup/memory" + path
    raise SystemExit("spawn_memory: no memory cgroup found for this process")


def run_once(module, mib, workers):
    kind, parent = own_cgroup()
    group = os.path.join(parent, f"spawn-memory-{os.getpid()}-{module}-{mib}")
    os.mkdir(group)
    peak_file = "memory.peak" if kind == "v2" else "memory.max_usage_in_bytes"
    try:
        # A script, not -c: spawned workers import the main module to find Holder.
        script = f"/tmp/spawn_memory_{os.getpid()}_{mib}.py"
        with open(script, "w") as out:
            out.write(CHILD.format(module=module, mib=mib, workers=workers))

        def enter():
            with open(os.path.join(group, "cgroup.procs"), "w") as procs:
                procs.write(str(os.getpid()))

        started = time.monotonic()
        done = subprocess.run([sys.executable, script], capture_output=True, text=True,
                              preexec_fn=enter, timeout=900)
        os.unlink(script)
        wall = time.monotonic() - started
        if done.returncode != 0:
            raise SystemExit(f"{module} at {mib} MiB failed:\n{done.stderr[-3000:]}")
        with open(os.path.join(group, peak_file)) as peak:
            peak_mib = int(peak.read()) / (1 << 20)
        return peak_mib, wall, done.stdout.strip()
    finally:
        _remove(group, parent)


def _remove(group, parent):
    """Removes the cgroup once its last process (a worker, multiprocessing's resource tracker)
    has gone; one still there after 30 s is moved to the parent."""
    for _ in range(300):
        try:
            os.rmdir(group)
            return
        except OSError:
            time.sleep(0.1)
    for pid in open(os.path.join(group, "cgroup.procs")).read().split():
        with open(os.path.join(parent, "cgroup.procs"), "w") as procs:
            procs.write(pid)
    os.rmdir(group)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 400])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    print(f"spawn, {args.workers} workers; peak memory of the whole process tree (cgroup)")
    for mib in args.sizes:
        for round_ in range(args.rounds):
            results = {m: run_once(m, mib, args.workers) for m in ("torch.utils.data", "mploader")}
            t_peak, t_wall, t_out = results["torch.utils.data"]
            m_peak, m_wall, m_out = results["mploader"]
            print(f"{mib} MiB round {round_}: torch {t_peak:.0f} MiB {t_wall:.1f} s ({t_out}); "
                  f"mploader {m_peak:.0f} MiB {m_wall:.1f} s ({m_out}); "
                  f"peak ratio {m_peak / t_peak:.2f}, time ratio {m_wall / t_wall:.2f}")


if __name__ == "__main__":
    main()
