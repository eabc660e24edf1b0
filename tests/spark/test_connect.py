"""Spark Connect: a Connect server started with the carbon-ds extension serves
``spark.read.format("carbondata")`` to a Connect client with the same pruning, and carbon_ds.sql works on
a Connect session whose server reaches the same files (docs/spark.md, "Spark Connect").

The server runs in a subprocess (``SparkSession.builder.remote("local")`` starts one in the calling
process, which cannot hold the suite's classic session too). The oracle is pyarrow on the rows written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import carbon_ds
from carbon_ds.errors import CarbonTableError
from carbon_ds.spark.statements.connect import check_reachable

ROWS = 3000

_CLIENT = textwrap.dedent('''
    import json, sys, warnings
    from pyspark.sql import SparkSession
    import carbon_ds
    path, warehouse = sys.argv[1:3]
    warnings.simplefilter("ignore")  # the client re-sends static confs the running server refuses, with warnings
    builder = (carbon_ds.configure_spark(SparkSession.builder.remote("local[1]"))
               .config("spark.ui.enabled", "false").config("spark.sql.warehouse.dir", warehouse))
    try:
        spark = builder.getOrCreate()
    except Exception as e:  # no server: the test skips, saying why
        print("NOCONNECT " + repr(e)[:500])
        sys.exit(0)
    out = {"session": type(spark).__module__}
    df = spark.read.format("carbondata").load(path).filter("id >= 2500 AND id < 2600").select("name")
    out["rows"] = sorted([r[0] for r in df.collect()], key=repr)
    out["plan"] = df._explain_string(extended=True)
    out["count"] = spark.read.format("carbondata").load(path).filter("name = 'n3'").count()
    carbon_ds.sql(spark, "CREATE TABLE conn_t (id BIGINT, name STRING) STORED AS carbondata")
    carbon_ds.sql(spark, f"INSERT INTO conn_t SELECT id, name FROM parquet.`{path}.parquet` WHERE id < 10")
    out["sql"] = sorted([list(r) for r in carbon_ds.sql(spark, "SELECT id, name FROM conn_t").collect()], key=repr)
    out["segments"] = len(carbon_ds.sql(spark, "SHOW SEGMENTS FOR TABLE conn_t").collect())
    print("RESULT " + json.dumps(out))
    spark.stop()
''')


def _data() -> pa.Table:
    ids = list(range(ROWS))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "name": [None if i % 11 == 0 else f"n{i % 9}" for i in ids],
        "v": pa.array([i * 1.5 for i in ids], pa.float64()),
    })


@pytest.mark.slow
@pytest.mark.spark
def test_connect_round_trip_with_the_extension(tmp_path, extension_jar):
    for module in ("grpc", "grpc_status", "google.rpc", "zstandard"):
        pytest.importorskip(module, reason="Spark Connect needs pyspark[connect]'s dependencies (the test extra)")
    data = _data()
    path = str(tmp_path / "conn")
    for start in range(0, ROWS, 1000):  # three files sorted on id: the filter leaves one
        carbon_ds.write_table(data.slice(start, 1000), path, sort_columns="id")
    pq.write_table(data, path + ".parquet")
    script = tmp_path / "client.py"
    script.write_text(_CLIENT)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    env.pop("SPARK_REMOTE", None)
    done = subprocess.run([sys.executable, str(script), path, str(tmp_path / "warehouse")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    reason = next((x for x in done.stdout.splitlines() if x.startswith("NOCONNECT ")), None)
    if reason is not None:
        pytest.skip(f"a local Spark Connect server could not start: {reason[len('NOCONNECT '):]}")
    got = json.loads(next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))[len("RESULT "):])

    assert got["session"].startswith("pyspark.sql.connect")
    keep = data.filter(pc.and_(pc.greater_equal(data["id"], 2500), pc.less(data["id"], 2600)))
    assert got["rows"] == sorted(keep["name"].to_pylist(), key=repr)
    assert got["count"] == pc.sum(pc.equal(data["name"], "n3")).as_py()
    # the server's optimizer ran the extension: the scan declares only id (the filter) and name, not v
    scan = next(line for line in got["plan"].splitlines() if "BatchScan carbondata" in line)
    assert "name#" in scan and "id#" in scan and "v#" not in scan
    first = data.slice(0, 10).select(["id", "name"])
    assert got["sql"] == sorted([list(r.values()) for r in first.to_pylist()], key=repr)
    assert got["segments"] == 1


class _Builder:
    host = "spark.example.com"


class _Client:
    _builder = _Builder()


class _RemoteSession:
    """What check_reachable sees of a Connect session whose server runs on another machine."""
    client = _Client()


def test_carbon_ds_sql_refuses_local_paths_on_a_remote_connect_server():
    with pytest.raises(CarbonTableError, match=r"local path /data/t, but the Connect server runs on spark.example.com"):
        check_reachable(_RemoteSession(), "/data/t", "the folder of table default.t")
    check_reachable(_RemoteSession(), "s3://bucket/t", "the folder of table default.t")  # a shared store is fine
