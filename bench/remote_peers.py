#!/usr/bin/env python3
"""The peer loaders of mploader-bench --workload remote, measured as pytorch_dataloader.py does.

Run with the project's Python (.venv). mploader-bench starts the servers (nginx serving the tar
folder on 127.0.0.1, moto_server as an S3-compatible endpoint) and calls this script twice over:

    remote_peers.py prepare --tar-dir DIR --endpoint http://127.0.0.1:PORT --bucket NAME \
        --mds-dir MDSDIR
  uploads DIR's *.tar and mploader-manifest.json to s3://NAME/tar/, writes the same samples
  in MosaicML Streaming's MDS format to MDSDIR and uploads that to s3://NAME/mds/; prints
  {"tar_objects": n, "mds_objects": m, "mds_bytes": b} (and a "note" when MDS was skipped).

    remote_peers.py measure --peer webdataset --urls 'http://127.0.0.1:PORT/shard-{000..007}.tar'
        --cache-dir DIR --workers 1,2 [--batch-size 32 --batches 120 --prefetch 2 --cache cold]
    remote_peers.py measure --peer mosaic --remote s3://NAME/mds --local DIR
        --endpoint http://127.0.0.1:PORT --workers 1,2 [...]
  the webdataset package's pipeline over HTTP, caching whole shards in --cache-dir, or
  MosaicML Streaming's StreamingDataset over S3, caching shards in --local. Prints one JSON
  object per worker count on stdout (pytorch_dataloader.py's fields, plus "source", "cache" and
  "downloaded_bytes": how much the cache folder grew during the run); progress goes to stderr.
  An empty folder is a cold run, one an earlier run filled a warm one.

Each sample goes through the jpeg workload's transform (pytorch_dataloader.JpegDataset), seeded
by its key, and the DataLoader is pytorch_dataloader.measure's (sequential, drop_last, fork,
persistent workers), so the numbers compare with the other peers'. Errors exit with status 2.
"""
import argparse
import atexit
import contextlib
import gc
import importlib.metadata
import importlib.util
import io
import json
import math
import os
import shutil
import signal
import stat
import sys
import tarfile
import tempfile
import traceback
import types
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_dataloader as pdl  # noqa: E402

import torch  # noqa: E402
from torch.utils.data import IterableDataset, get_worker_info  # noqa: E402

MANIFEST = "mploader-manifest.json"
INSTALL_HINT = ("run scripts/install-deps --bench (it makes .venv-mosaic from "
                "requirements/mosaic.txt), or set MPLOADER_MOSAIC_PYTHON to a Python that has it")
PROBE_TIMEOUT_S = 10  # a server that does not answer a HEAD in this long is reported, not waited


def fail(message):
    # As pytorch_dataloader.fail, under this script's name (its fail prints its own).
    print("remote_peers.py: " + message, file=sys.stderr)
    sys.exit(2)


def say(message):
    print("remote_peers.py: " + message, file=sys.stderr, flush=True)


def version(package):
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def folder_bytes(path):
    """The bytes of the regular files under `path`, as mploader-bench counts its own cache."""
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                st = os.lstat(os.path.join(root, name))
            except FileNotFoundError:  # a download's temporary file, renamed meanwhile
                continue
            if stat.S_ISREG(st.st_mode):
                total += st.st_size
    return total


def import_streaming():
    """MosaicML Streaming, or None and why not. Its package imports its vision datasets, which
    need torchvision, at import; this script uses none of them. PyPI's torchvision is built
    for the CUDA torch and does not load beside the venv's CPU torch (or is not there at all),
    so when that import fails an empty streaming.vision stands in and the import is retried."""
    try:
        import streaming
        return streaming, None
    except ModuleNotFoundError as e:
        if e.name == "streaming":
            return None, "mosaicml-streaming is not installed"
        first = e
    except (ImportError, RuntimeError, OSError) as e:
        first = e
    sys.modules["streaming.vision"] = types.ModuleType("streaming.vision")
    try:
        import streaming
        return streaming, None
    except Exception as e:
        return None, f"mosaicml-streaming does not import ({first}; then {e})"


def s3_client(endpoint):
    import boto3
    from botocore.config import Config
    # Bounded connects and reads, few retries: a dead endpoint fails in seconds, not minutes.
    config = Config(connect_timeout=PROBE_TIMEOUT_S, read_timeout=120,
                    retries={"max_attempts": 3, "mode": "standard"})
    return boto3.client("s3", endpoint_url=endpoint, config=config)


def s3_failure(what, endpoint, e):
    from botocore.exceptions import EndpointConnectionError, NoCredentialsError
    if isinstance(e, EndpointConnectionError):
        fail(f"{what}: the S3 endpoint {endpoint} does not answer ({e}); start moto_server "
             "there or pass the right --endpoint")
    if isinstance(e, NoCredentialsError):
        fail(f"{what}: no AWS credentials; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
             "(and AWS_DEFAULT_REGION) for the endpoint")
    fail(f"{what} at {endpoint} failed: {type(e).__name__}: {e}")


# ---------------------------------------------------------------------------------------------
# prepare

def tar_samples(path):
    """(key, jpg bytes, class) of each sample of a WebDataset tar, in tar order."""
    def done(key, members):
        if "jpg" not in members or "cls" not in members:
            fail(f"{path}: sample '{key}' has no .jpg or no .cls member; the remote workload "
                 "needs both")
        try:
            label = int(members["cls"].decode().strip())
        except ValueError:
            fail(f"{path}: {key}.cls is not a decimal class number")
        return key, members["jpg"], label

    try:
        with tarfile.open(path) as tar:
            for key, members in pdl.tar_groups(tar):
                yield done(key, members)
    except (OSError, tarfile.TarError) as e:
        fail(f"{path}: cannot read it as a tar ({e})")


def mds_sample_bytes(key_bytes, jpg_bytes):
    # MDS's encoding of one sample: a 4-byte size per variable column (key, jpg), the data,
    # the int64 class, and MDSWriter's 4-byte offset (its extra_bytes_per_sample).
    return 4 * 2 + key_bytes + jpg_bytes + 8 + 4


def mds_size_limit(tars):
    """A shard size limit that cuts the samples into about as many MDS shards as tars: the
    samples' MDS bytes over the tar count, plus one sample so that rounding adds no shard.
    Reads the tar headers only (tarfile seeks over the data)."""
    total = largest = 0
    for path in tars:
        with tarfile.open(path) as tar:
            jpgs = [m for m in tar.getmembers() if m.isfile() and m.name.endswith(".jpg")]
        for m in jpgs:
            n = mds_sample_bytes(len(m.name[:-len(".jpg")].encode()), m.size)
            total, largest = total + n, max(largest, n)
    return math.ceil(total / len(tars)) + largest


def write_mds(tars, mds_dir):
    """The tars' samples, in order, as MDS shards in mds_dir (no compression)."""
    from streaming import MDSWriter
    leftovers = os.listdir(mds_dir)
    # A write cut short leaves shards and no index: only then is the folder cleared.
    if any(not n.startswith("shard.") for n in leftovers):
        fail(f"--mds-dir {mds_dir} holds files that are not MDS shards and no index.json; "
             "pass an empty folder (or one a finished prepare wrote)")
    say(f"prepare: writing the {len(tars)} tars' samples as MDS shards into {mds_dir}")
    limit = mds_size_limit(tars)
    columns = {"key": "str", "jpg": "bytes", "cls": "int"}
    with MDSWriter(out=mds_dir, columns=columns, compression=None, size_limit=limit,
                   exist_ok=bool(leftovers)) as writer:
        for path in tars:
            for key, jpg, label in tar_samples(path):
                writer.write({"key": key, "jpg": jpg, "cls": label})


def prepare(args):
    try:
        tars = sorted(os.path.join(args.tar_dir, n) for n in os.listdir(args.tar_dir)
                      if n.endswith(".tar"))
    except OSError as e:
        fail(f"--tar-dir: cannot list {args.tar_dir} ({e})")
    if not tars:
        fail(f"--tar-dir: no .tar file in {args.tar_dir}; pass a folder of WebDataset shards")
    manifest = os.path.join(args.tar_dir, MANIFEST)
    if not os.path.isfile(manifest):
        fail(f"--tar-dir: {manifest} is missing; mploader-bench writes it beside the shards")
    try:
        import boto3  # noqa: F401
    except ImportError:
        fail(f"boto3 is not installed for {sys.executable}; run scripts/install-deps")

    client = s3_client(args.endpoint)
    try:
        from botocore.exceptions import ClientError
        try:
            client.head_bucket(Bucket=args.bucket)
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") not in ("404", "NoSuchBucket"):
                raise
            region = client.meta.region_name
            extra = ({"CreateBucketConfiguration": {"LocationConstraint": region}}
                     if region and region != "us-east-1" else {})
            client.create_bucket(Bucket=args.bucket, **extra)
        for path in tars + [manifest]:
            client.upload_file(path, args.bucket, "tar/" + os.path.basename(path))
    except Exception as e:
        s3_failure(f"uploading the tars to bucket {args.bucket}", args.endpoint, e)
    result = {"tar_objects": len(tars), "mds_objects": 0, "mds_bytes": 0}

    streaming, why_not = import_streaming()
    if streaming is None:
        result["note"] = (f"{why_not} for {sys.executable}, so the mosaic peer has no data; "
                          f"{INSTALL_HINT}")
        return result
    os.makedirs(args.mds_dir, exist_ok=True)
    if os.path.isfile(os.path.join(args.mds_dir, "index.json")):
        say(f"prepare: {args.mds_dir} holds an index.json already; not written again")
    else:
        write_mds(tars, args.mds_dir)
    files = sorted(n for n in os.listdir(args.mds_dir)
                   if os.path.isfile(os.path.join(args.mds_dir, n)))
    try:
        for name in files:
            client.upload_file(os.path.join(args.mds_dir, name), args.bucket, "mds/" + name)
    except Exception as e:
        s3_failure(f"uploading the MDS shards to bucket {args.bucket}", args.endpoint, e)
    result["mds_objects"] = len(files)
    result["mds_bytes"] = sum(os.path.getsize(os.path.join(args.mds_dir, n)) for n in files)
    return result


# ---------------------------------------------------------------------------------------------
# measure

class InProcessAlarm(IterableDataset):
    """Bounds each sample's wait with SIGALRM when the DataLoader has no workers (its timeout
    covers worker processes only) so that a stalled download ends the run instead of hanging."""

    def __init__(self, dataset, seconds):
        self.dataset, self.seconds = dataset, seconds

    def __iter__(self):
        watched = get_worker_info() is None
        it = iter(self.dataset)
        while True:
            if watched:
                signal.alarm(self.seconds)
            try:
                item = next(it)
            except StopIteration:
                return
            finally:
                if watched:
                    signal.alarm(0)
            yield item


def on_alarm(signum, frame):
    # Not an exception: unwinding would wait for webdataset's curl, which has no time limit.
    print("remote_peers.py: no sample within --timeout seconds in this process (workers 0): "
          "the server stopped sending; check it, or raise --timeout", file=sys.stderr, flush=True)
    if tempfile.tempdir and os.path.basename(tempfile.tempdir).startswith("remote_peers-"):
        shutil.rmtree(tempfile.tempdir, True)
    os._exit(2)


def timed_measure(dataset, workers, args):
    """pytorch_dataloader.measure, its DataLoader given timeout=--timeout: no batch from the
    workers in that long raises instead of waiting for ever."""
    make = pdl.make_loader

    def bounded(data, n, batch_size, prefetch):
        loader = make(data, n, batch_size, prefetch)
        if n > 0:
            loader.timeout = args.timeout  # read when the loader makes its iterator
        return loader

    if workers == 0:
        signal.signal(signal.SIGALRM, on_alarm)
        dataset = InProcessAlarm(dataset, args.timeout)
    pdl.make_loader = bounded
    try:
        return pdl.measure(dataset, workers, args.batch_size, args.batches, args.prefetch, 0.0)
    finally:
        pdl.make_loader = make


def http_probe(url):
    """The HTTP status of a HEAD of `url`; fails when the server does not answer."""
    request = urllib.request.Request(url, method="HEAD")
    try:
        with urllib.request.urlopen(request, timeout=PROBE_TIMEOUT_S) as response:
            return response.status
    except urllib.error.HTTPError as e:
        return e.code
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        fail(f"--urls: {url} does not answer ({reason}); start the HTTP server (mploader-bench "
             "starts nginx on 127.0.0.1) or pass the right host and port")


def manifest_samples(urls):
    """The sample count of `urls` from mploader-manifest.json beside them, or -1 when it is
    not there (webdataset itself cannot tell without reading every shard)."""
    base = urls[0].rsplit("/", 1)[0]
    try:
        with urllib.request.urlopen(f"{base}/{MANIFEST}", timeout=PROBE_TIMEOUT_S) as r:
            shards = {e["name"]: int(e["samples"]) for e in json.load(r)["shards"]}
        return sum(shards[u.rsplit("/", 1)[1]] for u in urls)
    except (OSError, ValueError, KeyError, TypeError):
        return -1


def webdataset_peer(args):
    try:
        import webdataset as wds
        from braceexpand import braceexpand
    except ImportError:
        fail(f"webdataset is not installed for {sys.executable}; run scripts/install-deps")
    if shutil.which("curl") is None:
        fail("curl is not on PATH; webdataset downloads http:// shards with it "
             "(apt-get install curl)")
    urls = list(braceexpand(args.urls))
    for url in urls:
        if urllib.parse.urlparse(url).scheme not in ("http", "https"):
            fail(f"--urls: {url} is not an http:// or https:// URL")
        status = http_probe(url)
        if status != 200:
            fail(f"--urls: {url} answers HTTP {status}; check the pattern against the server's "
                 "folder")
    os.makedirs(args.cache_dir, exist_ok=True)
    # WDS_CACHE would replace cache_dir in WebDataset's checks; the folder given here counts.
    os.environ.pop("WDS_CACHE", None)
    os.environ.pop("WDS_CACHE_SIZE", None)

    def build():
        return (wds.WebDataset(urls, shardshuffle=False, cache_dir=args.cache_dir)
                .decode("pil").to_tuple("jpg", "cls", "__key__").map(pdl.webdataset_sample))

    how = (f"webdataset {version('webdataset')}: WebDataset({len(urls)} http URLs, "
           "shardshuffle=False, cache_dir=...) (curl downloads each whole shard into the cache "
           "folder, then it is read from there), .decode('pil').to_tuple('jpg', 'cls', "
           "'__key__'), default_collate")
    return "http", args.cache_dir, build, lambda _: manifest_samples(urls), how


def mosaic_peer(args):
    streaming, why_not = import_streaming()
    if streaming is None:
        fail(f"{why_not} for {sys.executable}; {INSTALL_HINT}")
    from streaming.base.util import clean_stale_shared_memory
    from PIL import Image

    remote = urllib.parse.urlparse(args.remote)
    if remote.scheme != "s3" or not remote.netloc:
        fail(f"--remote: {args.remote} is not an s3://BUCKET/PREFIX URL")
    # Before the dataset's own downloads, whose errors come retried and wrapped.
    index_key = "/".join(p for p in (remote.path.strip("/"), "index.json") if p)
    try:
        s3_client(args.endpoint).head_object(Bucket=remote.netloc, Key=index_key)
    except Exception as e:
        from botocore.exceptions import ClientError
        if isinstance(e, ClientError):
            fail(f"--remote: s3://{remote.netloc}/{index_key} is not there "
                 f"({e.response.get('Error', {}).get('Code')}); run remote_peers.py prepare "
                 "first, or pass the prefix it uploaded to (s3://BUCKET/mds)")
        s3_failure(f"reading s3://{remote.netloc}/{index_key}", args.endpoint, e)
    # How MosaicML Streaming's S3 client is pointed at another endpoint than AWS.
    os.environ["S3_ENDPOINT_URL"] = args.endpoint
    os.makedirs(args.local, exist_ok=True)
    # Its file locks go to the temporary folder and stay after the run; there they would also
    # make the next dataset skip their prefix. A folder of this process's keeps them apart.
    tempfile.tempdir = tempfile.mkdtemp(prefix="remote_peers-")
    atexit.register(shutil.rmtree, tempfile.tempdir, True)

    class MosaicJpeg(streaming.StreamingDataset):
        """Each MDS sample as pytorch_dataloader.webdataset_sample makes a WebDataset one."""

        def get_item(self, sample_id, retry=7):
            s = super().get_item(sample_id, retry)
            with Image.open(io.BytesIO(s["jpg"])) as im:
                rgb = im.convert("RGB")
            return pdl.webdataset_sample((rgb, s["cls"], s["key"]))

    def build():
        # Shared memory that a killed run (or this process's previous dataset) left is removed
        # first, so that the new dataset's prefix lookup neither waits on it nor collides.
        clean_stale_shared_memory()
        return MosaicJpeg(remote=args.remote, local=args.local, shuffle=False,
                          batch_size=args.batch_size, download_timeout=args.timeout)

    how = (f"mosaicml-streaming {version('mosaicml-streaming')}: StreamingDataset(remote=s3 "
           f"via S3_ENDPOINT_URL, local=..., shuffle=False, batch_size={args.batch_size}, "
           f"download_timeout={args.timeout}, predownload and cache_limit at their defaults) "
           "of MDS shards (key str, jpg bytes, cls int; no compression), get_item decoding "
           "with PIL; default_collate")
    return "s3", args.local, build, lambda data: int(data.num_samples), how


def measure(args):
    torch.set_num_threads(1)
    source, folder, build, size_of, how = (webdataset_peer if args.peer == "webdataset"
                                           else mosaic_peer)(args)
    note = f"PyTorch {torch.__version__} ({sys.executable}), {how}; {pdl.JPEG_NOTE}"
    for workers in args.workers:
        say(f"{args.peer} remote workers={workers} cache={args.cache} ({folder})")
        before = folder_bytes(folder)  # before the build: mosaic's index.json counts too
        try:
            # Libraries' stray prints would land in the JSON lines; the workers inherit this.
            with contextlib.redirect_stdout(sys.stderr):
                dataset = build()
                size = size_of(dataset)
                measured = timed_measure(dataset, workers, args)
                # In-process (workers 0), closing the DataLoader's iterator leaves Streaming's
                # download threads running on; they would fill the folder after the count.
                running = getattr(dataset, "_iterator", None)
                if running is not None:
                    running.exit()
        except Exception as e:
            traceback.print_exc()
            fail(f"{args.peer} workers={workers} failed: {type(e).__name__}: {e}\n(traceback "
                 f"above; check that {args.urls or args.endpoint} still answers and that "
                 f"{folder} is writable)")
        del dataset
        gc.collect()
        result = {"loader": args.peer, "workload": "remote", "workers": workers,
                  "batch_size": args.batch_size, "prefetch": args.prefetch}
        result.update(measured)
        result["dataset_size"] = size
        result["torch_version"] = torch.__version__
        result["note"] = note
        result["source"] = source
        result["cache"] = args.cache
        result["downloaded_bytes"] = folder_bytes(folder) - before
        print(json.dumps(result), flush=True)


# ---------------------------------------------------------------------------------------------

def parse_workers(text):
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        fail(f"--workers: '{text}' is not a comma list of whole numbers")
    if any(v < 0 for v in values) or len(set(values)) != len(values):
        fail(f"--workers: '{text}': give distinct whole numbers >= 0")
    return values


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    pre = sub.add_parser("prepare", help="upload the tars, write and upload the MDS copy")
    pre.add_argument("--tar-dir", required=True)
    pre.add_argument("--endpoint", required=True, help="the S3 endpoint, http://HOST:PORT")
    pre.add_argument("--bucket", required=True)
    pre.add_argument("--mds-dir", required=True)
    m = sub.add_parser("measure", help="time one peer loader at each worker count")
    m.add_argument("--peer", choices=["webdataset", "mosaic"], required=True)
    m.add_argument("--urls", help="webdataset: the shards' URLs, a brace pattern")
    m.add_argument("--cache-dir", help="webdataset: its shard cache folder")
    m.add_argument("--remote", help="mosaic: s3://BUCKET/PREFIX of the MDS shards")
    m.add_argument("--local", help="mosaic: its shard cache folder")
    m.add_argument("--endpoint", help="mosaic: the S3 endpoint, http://HOST:PORT")
    m.add_argument("--workers", default="2")
    m.add_argument("--batch-size", type=int, default=64)
    m.add_argument("--batches", type=int, default=200)
    m.add_argument("--prefetch", type=int, default=2)
    m.add_argument("--cache", choices=["cold", "warm"], default="cold",
                   help="the label of the run: the folder's state decides what it is")
    m.add_argument("--timeout", type=int, default=300,
                   help="seconds to wait for one batch (one shard download) before failing")
    args = p.parse_args()
    if args.command == "measure":
        needed = (["urls", "cache_dir"] if args.peer == "webdataset"
                  else ["remote", "local", "endpoint"])
        missing = ["--" + n.replace("_", "-") for n in needed if getattr(args, n) is None]
        if missing:
            fail(f"measure --peer {args.peer} needs {' and '.join(missing)}")
        args.workers = parse_workers(args.workers)
        if args.batch_size < 1 or args.batches < 2 or args.prefetch < 1 or args.timeout < 1:
            fail("--batch-size, --prefetch and --timeout must be >= 1, --batches >= 2")
    return args


def mosaic_python():
    """The Python of MosaicML Streaming's own environment: MPLOADER_MOSAIC_PYTHON, else the
    .venv-mosaic beside the environment running this script (scripts/install-deps --bench makes
    it beside .venv). It has its own, because mosaicml-streaming pins numpy below .venv's."""
    named = os.environ.get("MPLOADER_MOSAIC_PYTHON")
    if named:
        return named
    return os.path.join(os.path.dirname(sys.prefix), ".venv-mosaic", "bin", "python")


def main():
    args = parse_args()
    needs_streaming = args.command == "prepare" or getattr(args, "peer", None) == "mosaic"
    if needs_streaming and importlib.util.find_spec("streaming") is None:
        python = mosaic_python()
        # Once only (a venv's python is a link to the same interpreter, so paths cannot tell
        # two environments apart): the same command in the environment that has streaming.
        if os.access(python, os.X_OK) and "MPLOADER_MOSAIC_REEXEC" not in os.environ:
            os.environ["MPLOADER_MOSAIC_REEXEC"] = python
            os.execv(python, [python, os.path.abspath(__file__)] + sys.argv[1:])
    if args.command == "prepare":
        with contextlib.redirect_stdout(sys.stderr):  # stdout is the one JSON line
            result = prepare(args)
        print(json.dumps(result), flush=True)
    else:
        measure(args)


if __name__ == "__main__":
    main()
