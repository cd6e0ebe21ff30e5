"""Runs examples/tar_shards_mlp against a real S3-compatible bucket, as a user would.

Writes Fashion-MNIST as tar shards (12 of 1,000 training samples, 2 of 1,000 test samples),
writes their manifests with mploader-manifest, starts moto_server on 127.0.0.1, creates a bucket
and uploads the shards through boto3, then trains with only the bucket's URLs and credentials.
Prints the example's output and exits with its status; prints "skipped: <why>" and exits 0
when moto is not installed.

Usage: s3_example.py EXAMPLE MANIFEST_TOOL FMNIST_DIR WORK_DIR
"""
import gzip
import io
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import time


def read_idx(path, header):
    with gzip.open(path, "rb") as f:
        return f.read()[header:]


def write_shards(folder, images, labels, per_shard, shards):
    os.makedirs(folder)
    for s in range(shards):
        with tarfile.open(os.path.join(folder, "shard-%03d.tar" % s), "w") as tar:
            for i in range(s * per_shard, (s + 1) * per_shard):
                for ext, data in (("img", images[i * 784:(i + 1) * 784]),
                                  ("cls", str(labels[i]).encode())):
                    info = tarfile.TarInfo("%06d.%s" % (i, ext))
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    example, manifest_tool, fmnist, work = sys.argv[1:5]
    try:
        import boto3  # noqa: F401  (comes with moto[server])
    except ImportError:
        print("skipped: boto3 and moto are not installed: run scripts/install-deps")
        return 0
    moto = os.path.join(os.path.dirname(sys.executable), "moto_server")
    shutil.rmtree(work, ignore_errors=True)
    images = read_idx(os.path.join(fmnist, "train-images-idx3-ubyte.gz"), 16)
    labels = read_idx(os.path.join(fmnist, "train-labels-idx1-ubyte.gz"), 8)
    write_shards(os.path.join(work, "train"), images, labels, 1000, 12)
    images = read_idx(os.path.join(fmnist, "t10k-images-idx3-ubyte.gz"), 16)
    labels = read_idx(os.path.join(fmnist, "t10k-labels-idx1-ubyte.gz"), 8)
    write_shards(os.path.join(work, "test"), images, labels, 1000, 2)
    for split in ("train", "test"):
        subprocess.run([manifest_tool, os.path.join(work, split)], check=True)
    port = free_port()
    endpoint = "http://127.0.0.1:%d" % port
    server = subprocess.Popen([moto, "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(1500):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.01)
        env = dict(os.environ, AWS_ACCESS_KEY_ID="example", AWS_SECRET_ACCESS_KEY="example",
                   AWS_ENDPOINT_URL=endpoint, MPLOADER_CACHE_DIR=os.path.join(work, "cache"))
        env.pop("AWS_PROFILE", None)
        s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                          aws_access_key_id="example", aws_secret_access_key="example")
        s3.create_bucket(Bucket="fmnist-shards")
        for split in ("train", "test"):
            folder = os.path.join(work, split)
            for name in sorted(os.listdir(folder)):
                s3.upload_file(os.path.join(folder, name), "fmnist-shards", split + "/" + name)
        run = subprocess.run([example, "--train", "s3://fmnist-shards/train/",
                              "--test", "s3://fmnist-shards/test/", "--workers", "2",
                              "--min-accuracy", "0.7"], env=env)
        print("exit status %d" % run.returncode)
        return run.returncode
    finally:
        server.kill()
        server.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
