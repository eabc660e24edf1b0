"""A table on an S3 API served on 127.0.0.1 by moto, driven through pyarrow's S3FileSystem (endpoint from
AWS_ENDPOINT_URL): append, overwrite, DELETE, UPDATE and CLEAN FILES give the rows a local table gives."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from carbon_ds.api import read_table, write_table
from carbon_ds.table.table import CarbonTable

moto_server = shutil.which("moto_server", path=os.path.dirname(sys.executable))
pytestmark = pytest.mark.skipif(moto_server is None, reason="moto[server] not installed")


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([moto_server, "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    env = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1",
           "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}"}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        fs = pafs.S3FileSystem(endpoint_override=f"127.0.0.1:{port}", scheme="http", access_key="test",
                               secret_key="test", region="us-east-1", allow_bucket_creation=True)
        for _ in range(50):
            try:
                fs.create_dir("carbon-test")
                break
            except OSError:
                time.sleep(0.2)
        yield "s3://carbon-test"
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        proc.terminate()
        proc.wait(timeout=30)


def _ids(path, **kw):
    return sorted(read_table(path, **kw).column("id").to_pylist())


def test_table_lifecycle_on_s3(s3):
    path = f"{s3}/life"
    write_table(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "s": ["a", "b", "c"]}), path)
    write_table(pa.table({"id": pa.array([4, 5], pa.int64()), "s": ["d", "@NU#LL$!"]}), path)
    assert _ids(path) == [1, 2, 3, 4, 5]
    assert read_table(path, filter="id = 5").column("s").to_pylist() == ["@NU#LL$!"]
    t = CarbonTable.open(path)
    assert t.delete("id = 2") == 1
    assert _ids(path) == [1, 3, 4, 5]
    t.update({"s": "z"}, "id = 4")
    assert read_table(path, filter="id = 4").column("s").to_pylist() == ["z"]
    write_table(pa.table({"id": pa.array([10, 11], pa.int64()), "s": ["x", "y"]}), path, mode="overwrite")
    assert _ids(path) == [10, 11]
    CarbonTable.open(path).clean_files(force=True)
    assert _ids(path) == [10, 11] and CarbonTable.open(path).count() == 2
