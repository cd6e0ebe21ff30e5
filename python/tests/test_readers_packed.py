"""PackedShards and BlockShuffleSampler from Python. The packs here are written by a second,
independent writer of the documented layout (docs/packing.md), so the reader is held to the
layout rather than to its own writer; webdataset reads the same tars as a stream."""
import hashlib
import io
import json
import os
import struct

import pytest
import torch
from torch.utils.data import DistributedSampler

import mploader


def _tar_member(name, data):
    import tarfile

    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = len(data), 0, 0o644
    return info.tobuf(format=tarfile.USTAR_FORMAT) + data + b"\0" * (-len(data) % 512)


def _npy(array):
    buffer = io.BytesIO()
    import numpy

    numpy.save(buffer, array)
    return buffer.getvalue()


def write_pack(folder, samples, per_shard):
    """x: float32 [2] = (i, -i) as .npy; label: i % 5 as text; name: "s<i>" as text."""
    import numpy

    os.makedirs(folder)
    fields = [("x", "npy", "npy"), ("label", "int", "cls"), ("name", "text", "txt")]
    shards = []
    for first in range(0, samples, per_shard):
        count = min(per_shard, samples - first)
        tar, records = b"", b""
        for i in range(first, first + count):
            values = [_npy(numpy.array([i, -i], dtype=numpy.float32)), str(i % 5).encode(),
                      f"s{i}".encode()]
            digest = hashlib.sha256()
            for (field, _, ext), value in zip(fields, values):
                header = _tar_member(f"{i:09d}.{field}.{ext}", value)
                records += struct.pack("<QQ", len(tar) + 512, len(value))
                tar += header
                digest.update(value)
            records += digest.digest()
        tar += b"\0" * 1024
        n = len(shards)
        index = (b"MPLPIDX1" + struct.pack("<QQQQ", len(fields), first, count, len(tar)) +
                 b"\0" * 24 + records)
        for name, data in ((f"shard-{n:06d}.tar", tar), (f"shard-{n:06d}.idx", index)):
            with open(os.path.join(folder, name), "wb") as f:
                f.write(data)
        shards.append({"tar": f"shard-{n:06d}.tar", "tar_bytes": len(tar),
                       "tar_sha256": hashlib.sha256(tar).hexdigest(),
                       "index": f"shard-{n:06d}.idx", "index_bytes": len(index),
                       "index_sha256": hashlib.sha256(index).hexdigest(),
                       "first_sample": first, "samples": count})
    description = {"format": "mploader-pack", "version": 1, "samples": samples,
                   "key_digits": 9, "fields": [{"name": f, "kind": k} for f, k, _ in fields],
                   "settings": {}, "shards": shards}
    with open(os.path.join(folder, "mploader-pack.json"), "w") as f:
        json.dump(description, f)


def test_two_ranks_of_two_workers_read_torchs_distributed_order(tmp_path):
    pytest.importorskip("numpy")
    write_pack(tmp_path / "p", 101, 16)
    data = mploader.PackedShards(tmp_path / "p")
    assert len(data) == 101
    assert data.fields == ["x:npy", "label:int", "name:text"]
    assert data.shard_sizes == [16] * 6 + [5]
    for rank in range(2):
        sampler = DistributedSampler(data, num_replicas=2, rank=rank, seed=9)
        sampler.set_epoch(2)
        loader = mploader.DataLoader(data, batch_size=7, sampler=sampler, num_workers=2)
        seen = []
        for batch in loader:
            seen += batch["x"][:, 0].long().tolist()
            assert torch.equal(batch["x"][:, 1], -batch["x"][:, 0])
            assert batch["label"].tolist() == [int(i) % 5 for i in batch["x"][:, 0]]
            assert batch["name"] == [f"s{int(i)}" for i in batch["x"][:, 0]]
        assert seen == list(sampler)


def test_block_shuffle_reads_every_sample_once_a_block_of_shards_at_a_time(tmp_path):
    pytest.importorskip("numpy")
    write_pack(tmp_path / "p", 160, 10)
    data = mploader.PackedShards(tmp_path / "p")
    orders = []
    for rank in range(2):
        sampler = mploader.BlockShuffleSampler(data, 40, num_replicas=2, rank=rank, seed=1)
        sampler.set_epoch(5)
        loader = mploader.DataLoader(data, batch_size=8, sampler=sampler, num_workers=2)
        order = [int(i) for b in loader for i in b["x"][:, 0]]
        assert order == list(sampler)
        # Each block of 40 is four whole shards.
        for start in range(0, 80, 40):
            assert len({i // 10 for i in order[start:start + 40]}) == 4
        orders += order
    assert sorted(orders) == list(range(160))
    with pytest.raises(mploader.OptionError, match="shards given hold 150 samples"):
        mploader.BlockShuffleSampler(data, 40, shard_samples=[10] * 15)


def test_webdataset_reads_the_same_tars_as_a_stream(tmp_path):
    wds = pytest.importorskip("webdataset")
    pytest.importorskip("numpy")
    write_pack(tmp_path / "p", 30, 8)
    tars = sorted(str(p) for p in (tmp_path / "p").glob("*.tar"))
    stream = wds.WebDataset(tars, shardshuffle=False).decode()
    keys = [(s["__key__"], s["label.cls"], s["name.txt"]) for s in stream]
    assert keys == [(f"{i:09d}", i % 5, f"s{i}") for i in range(30)]


def test_a_missing_pack_or_a_field_that_is_no_image_is_named(tmp_path):
    pytest.importorskip("numpy")
    with pytest.raises(mploader.OptionError, match="no pack at"):
        mploader.PackedShards(tmp_path / "nothing")
    write_pack(tmp_path / "p", 10, 4)
    from mploader.vision import Resize

    with pytest.raises(mploader.OptionError, match='has no image field "x"'):
        mploader.PackedShards(tmp_path / "p", image_fields={"x": Resize((8, 8))})
    with pytest.raises(mploader.OptionError, match="remote_read"):
        mploader.PackedShards(tmp_path / "p", remote_read="sometimes")


@pytest.fixture
def nginx(tmp_path):
    """nginx serving tmp_path/www on a free port of 127.0.0.1 (ranges, as object stores do)."""
    import shutil
    import socket
    import subprocess
    import time

    binary = "/usr/sbin/nginx"
    if not os.access(binary, os.X_OK):
        pytest.skip(f"skipped: {binary} is missing: scripts/install-deps installs nginx-light")
    root, state = tmp_path / "www", tmp_path / "nginx"
    root.mkdir()
    (state / "tmp").mkdir(parents=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    user = "user root;\n" if os.geteuid() == 0 else ""
    (state / "nginx.conf").write_text(
        f"{user}daemon off;\nworker_processes 1;\npid {state}/nginx.pid;\n"
        f"error_log {state}/error.log;\nevents {{ worker_connections 64; }}\n"
        f"http {{\n  access_log off;\n  client_body_temp_path {state}/tmp;\n"
        f"  server {{ listen 127.0.0.1:{port}; root {root}; }}\n}}\n")
    server = subprocess.Popen([binary, "-p", str(state), "-c", str(state / "nginx.conf")],
                              stderr=subprocess.DEVNULL)
    for _ in range(500):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            break
        except OSError:
            if server.poll() is not None:
                pytest.skip("skipped: nginx exited at start: " +
                            (state / "error.log").read_text()[-500:])
            time.sleep(0.01)
    yield root, f"http://127.0.0.1:{port}"
    server.terminate()  # the master stops its worker; killed, it would leave the worker behind
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
    shutil.rmtree(state / "tmp", ignore_errors=True)


def test_a_pack_by_url_reads_torchs_distributed_order_by_ranged_requests(tmp_path, nginx):
    pytest.importorskip("numpy")
    root, url = nginx
    write_pack(root / "p", 90, 8)
    data = mploader.PackedShards(url + "/p", remote={"cache_dir": str(tmp_path / "cache")})
    assert len(data) == 90
    everything = []
    for rank in range(2):
        sampler = DistributedSampler(data, num_replicas=2, rank=rank, seed=5)
        sampler.set_epoch(1)
        loader = mploader.DataLoader(data, batch_size=6, sampler=sampler, num_workers=2)
        order = []
        for batch in loader:
            order += batch["x"][:, 0].long().tolist()
            assert batch["name"] == [f"s{int(i)}" for i in batch["x"][:, 0]]
        assert order == list(sampler)
        everything += order
    assert sorted(set(everything)) == list(range(90))
    # Ranged reads: no tar was downloaded whole into the cache (indexes only).
    assert not [p for p in (tmp_path / "cache").rglob("*") if p.is_file() and
                p.stat().st_size >= min(os.path.getsize(t) for t in (root / "p").glob("*.tar"))
                and not p.name.startswith(".")]
