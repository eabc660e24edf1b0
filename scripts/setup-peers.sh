#!/usr/bin/env bash
# The environment of benchmarks/peers.py: Delta Lake on Spark (delta-spark) beside carbon-ds in one Spark.
# delta-spark 4.4.0 is built for Spark 4.0-4.2 (its pip package admits PySpark <= 4.2.0), so this is a third
# venv, .venv-peers, with PySpark 4.2.0 (inside carbon-ds's range), delta-spark 4.4.0, DuckDB 1.5.5 with its
# TPC-H extension (the data and the reference answers), and carbon-ds installed from the wheel
# scripts/build-wheel.sh builds (its extension jar runs on every PySpark in range). Delta's jars
# (io.delta:delta-spark_4.2_2.13) are fetched from Maven Central by Spark's --packages resolver when the first
# session starts, and kept in ~/.ivy2. Benchmark only: nothing here is needed to use carbon-ds.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
py="${PYTHON:-python3}"
venv=.venv-peers
stamp=$venv/.carbon-ds-installed
want=$(cat pyproject.toml scripts/setup-peers.sh | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    rm -rf "$venv"
    "$py" -m venv "$venv"
    echo ">> installing PySpark 4.2.0, delta-spark 4.4.0 and DuckDB 1.5.5 into $venv" >&2
    if ! { "$venv/bin/python" -m pip install --upgrade pip &&
           "$venv/bin/python" -m pip install "pyspark==4.2.0" "delta-spark==4.4.0" "pandas>=2.2,<4" \
               "duckdb==1.5.5" "duckdb-extension-tpch==1.5.5" "pyarrow>=18,<27" "numpy>=1.26,<3" "cramjam>=2.8,<3" \
               "numba>=0.60,<1" "tqdm>=4.66,<5"; } >"$venv/install.log" 2>&1; then
        tail -n 40 "$venv/install.log" >&2
        echo "installing the peers' environment failed; the full log is $root/$venv/install.log" >&2
        exit 1
    fi
    echo "$want" > "$stamp"
fi
wheel=$(bash scripts/build-wheel.sh)
"$venv/bin/python" -m pip install --quiet --no-deps --force-reinstall "$wheel"
echo "$root/$venv/bin/python"
