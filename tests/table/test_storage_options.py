"""storage_options and filesystem= on every entry point (read_table, scan, write_table, CarbonTable.open /
create, the CLI), against an S3 API served on 127.0.0.1 by moto with no AWS_* environment variable set: the
settings reach the one file-system layer (carbon_ds.fs.resolve) and every later access below the path."""

from __future__ import annotations

import os
import shutil
import sys

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

import carbon_ds
from carbon_ds import fs
from carbon_ds.cli import main
from carbon_ds.errors import CarbonOptionError
from carbon_ds.table.table import CarbonTable

moto_server = shutil.which("moto_server", path=os.path.dirname(sys.executable))
pytestmark = pytest.mark.skipif(moto_server is None, reason="moto[server] not installed")
AWS_VARS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL",
            "AWS_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE")


@pytest.fixture(scope="module")
def endpoint(moto_s3):
    return moto_s3


@pytest.fixture(autouse=True)
def no_aws_environment(monkeypatch, tmp_path):
    for k in AWS_VARS:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setattr(fs, "_configured", {})  # each test configures its own paths


def _options(endpoint: str) -> dict:
    # names as delta-rs / object_store spell them: the aliases map onto pyarrow's S3FileSystem
    return {"aws_access_key_id": "k", "aws_secret_access_key": "s", "aws_region": "us-east-1",
            "endpoint_url": endpoint}


def test_every_python_entry_point_takes_storage_options(endpoint):
    path, opts = "s3://opts/t1", _options(endpoint)
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "s": ["a", "b", "c"]})
    carbon_ds.write_table(data, path, storage_options=opts)
    assert carbon_ds.read_table(path, storage_options=opts).equals(data)
    assert carbon_ds.scan(path, filter="id >= 2", storage_options=opts).count() == 2
    t = CarbonTable.open(path, storage_options=opts)
    assert t.delete("id = 1") == 1
    assert carbon_ds.read_table(path, storage_options=opts)["id"].to_pylist() == [2, 3]
    created = CarbonTable.create("s3://opts/t2", data.schema, storage_options=opts)
    assert created.count() == 0


def test_without_settings_the_store_is_not_reached(endpoint):
    with pytest.raises(Exception):  # noqa: B017 - pyarrow's own error: no endpoint, no credentials
        carbon_ds.read_table("s3://opts/missing-settings/t")


def test_a_filesystem_object_and_its_own_paths(endpoint):
    host = endpoint.split("://", 1)[1]
    s3 = pafs.S3FileSystem(endpoint_override=host, scheme="http", access_key="k", secret_key="s", region="us-east-1")
    data = pa.table({"id": pa.array([7, 8], pa.int64())})
    carbon_ds.write_table(data, "opts/t3", filesystem=s3)  # the file system's own path, no scheme
    assert carbon_ds.read_table("opts/t3", filesystem=s3).equals(data)
    assert carbon_ds.read_table("s3://opts/t3", filesystem=s3).equals(data)
    assert CarbonTable.open("opts/t3", filesystem=s3).count() == 2


def test_cli_storage_option(endpoint, capsys):
    path = "s3://opts/t4"
    carbon_ds.write_table(pa.table({"id": pa.array([1], pa.int64())}), path, storage_options=_options(endpoint))
    fs._configured.clear()
    args = [f"--storage-option={k}={v}" for k, v in _options(endpoint).items()]
    assert main([*args, "show-segments", path]) == 0
    assert "|0 " in capsys.readouterr().out


def test_option_errors_name_what_is_valid():
    with pytest.raises(CarbonOptionError, match="unknown storage option.*endpoint_urll.*valid: .*access_key"):
        fs.resolve("s3://b/t", {"endpoint_urll": "x"})
    with pytest.raises(CarbonOptionError, match="not both"):
        fs.resolve("s3://b/t", {}, pafs.S3FileSystem(anonymous=True))
    with pytest.raises(CarbonOptionError, match="local path"):
        fs.resolve("/tmp/t", {"region": "x"})


def test_explain_takes_storage_options(endpoint):
    path, opts = "s3://opts/explained", _options(endpoint)
    for start in (0, 10):  # two segments, ids 0-9 and 10-19: min/max rule out the first for id >= 10
        carbon_ds.write_table(pa.table({"id": pa.array(range(start, start + 10), pa.int64())}), path,
                              storage_options=opts)
    fs._configured.clear()  # nothing remembered: the settings must come with the call
    plan = carbon_ds.explain(path, filter="id >= 10", storage_options=opts)
    assert plan["segments"] == {"total": 2, "read": 1, "skipped": 1}
    assert plan["rows"] == {"total": 20, "read": 10, "skipped": 10}
