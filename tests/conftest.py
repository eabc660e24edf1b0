"""Shared fixtures: one SparkSession for the whole run, the real-file corpus, temp tables."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "compat" / "carbondata-real"


def pytest_sessionstart(session):
    # CI always has ../shared beside the clone: there a missing corpus must fail the run, not skip tests
    if os.environ.get("CI") and not CORPUS.is_dir():
        raise pytest.UsageError(f"real CarbonData corpus not found at {CORPUS}")


def pytest_collection_modifyitems(config, items):
    # Under pytest -n (scripts/test.sh) each worker takes whole files, in this order: files holding a
    # `slow` case go first, so that the last file a worker takes is a short one and neither worker idles long
    # at the end. Within a file the order stays as written; a run without workers keeps the written order.
    if not hasattr(config, "workerinput"):
        return
    slow_files = {item.nodeid.split("::")[0] for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.nodeid.split("::")[0] not in slow_files)


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"real CarbonData corpus not found at {CORPUS}")
    return CORPUS


def _java_available() -> bool:
    return shutil.which("java") is not None or bool(os.environ.get("JAVA_HOME"))


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    """One local SparkSession per test run (starting one costs seconds)."""
    if not _java_available():
        pytest.skip("Spark tests need Java 17+ on PATH")
    pyspark = pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    import carbon_ds
    from carbon_ds.spark.bridge.extension import jar_path

    # Python workers must use this interpreter (the one with pyarrow and carbon-ds), not whatever is on PATH
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

    warehouse = tmp_path_factory.mktemp("warehouse")
    builder = SparkSession.builder
    # the Catalyst extension (carbon_ds/jars, built by scripts/setup.sh) when present: every plan prunes
    if jar_path() is not None:
        builder = carbon_ds.configure_spark(builder)
    session = (
        builder.master("local[2]")
        .appName("carbon-ds-tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    if hasattr(carbon_ds, "register"):
        carbon_ds.register(session)
    assert pyspark.__version__
    yield session
    session.stop()


def _need_extension_jar() -> None:
    from carbon_ds.spark.bridge.extension import jar_path

    if jar_path() is None:
        if os.environ.get("CI"):  # CI builds the jar (scripts/setup.sh): its absence is a failure there
            pytest.fail("the Spark extension jar was not built (scripts/setup.sh runs scripts/build-jvm.sh)")
        pytest.skip("the Spark extension jar is not built (needs a JDK: scripts/build-jvm.sh)")


@pytest.fixture
def extension_jar() -> None:
    """For tests that start their own Spark: the Catalyst extension's jar must be built."""
    _need_extension_jar()


@pytest.fixture(scope="session")
def ext(spark):
    """The session's Spark with the Catalyst extension active and carbon-ds registered."""
    import carbon_ds
    from carbon_ds.spark.bridge.extension import extension_active

    _need_extension_jar()
    assert extension_active(spark)
    carbon_ds.register(spark)
    return spark


AWS_VARS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL",
            "AWS_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE")


@pytest.fixture(scope="session")
def moto_s3():
    """A local S3 API (moto's server on 127.0.0.1) holding the bucket ``opts``: its http:// endpoint. It
    accepts any credentials; nothing reaches it unless a test gives that endpoint."""
    moto_server = shutil.which("moto_server", path=os.path.dirname(sys.executable))
    if moto_server is None:
        pytest.skip("moto[server] not installed")
    import pyarrow.fs as pafs

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k not in AWS_VARS}
    proc = subprocess.Popen([moto_server, "-H", "127.0.0.1", "-p", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        admin = pafs.S3FileSystem(endpoint_override=f"127.0.0.1:{port}", scheme="http", access_key="k",
                                  secret_key="s", region="us-east-1", allow_bucket_creation=True)
        for _ in range(50):
            try:
                admin.create_dir("opts")
                break
            except OSError:
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
