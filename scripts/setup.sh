#!/usr/bin/env bash
# Creates .venv and installs carbon-ds with its Spark, test and docs extras; re-runs only when pyproject.toml changes.
# --bench adds the benchmarks' extra (matplotlib for charts, DuckDB's TPC-H wheel, deltalake).
set -euo pipefail
extras="spark,test,docs"
if [ "${1:-}" = "--bench" ]; then
    extras="spark,test,docs,bench"
fi
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

py="${PYTHON:-python3}"
if ! "$py" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
    echo "carbon-ds needs Python 3.11 or newer; '$py' is $("$py" --version 2>&1 || echo missing)." >&2
    exit 1
fi

java_ok=1
if ! command -v java >/dev/null 2>&1; then
    java_ok=0
    echo "WARNING: no 'java' on PATH. Spark needs Java 17 or newer (e.g. 'apt-get install openjdk-17-jre-headless');" >&2
    echo "         the pure-Python reader and writer work without it, Spark features and tests will not." >&2
else
    jv=$(java -version 2>&1 | awk -F'"' '/version/ {print $2}' | cut -d. -f1)
    if [ "${jv:-0}" -lt 17 ] 2>/dev/null; then
        java_ok=0
        echo "WARNING: Java $jv found; Spark 4 needs Java 17 or newer." >&2
    fi
fi
export CARBON_DS_JAVA_OK=$java_ok

if [ ! -x .venv/bin/python ]; then
    echo ">> creating .venv"
    "$py" -m venv .venv
fi
stamp=.venv/.carbon-ds-installed
want=$( (cat pyproject.toml scripts/setup.sh; echo "$extras") | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo ">> installing carbon-ds and its dependencies into .venv (first run takes a minute or two)"
    log=.venv/install.log
    # the build backend is chatty about editable installs: keep its output for when something fails
    # (a plain editable install puts the project folder on sys.path, where Spark finds pyspark_carbondata:
    # see [tool.setuptools] in pyproject.toml)
    if ! { .venv/bin/python -m pip install --upgrade pip &&
           .venv/bin/python -m pip install -e ".[$extras]"; } >"$log" 2>&1; then
        tail -n 40 "$log" >&2
        echo "installing carbon-ds failed; the full log is $root/$log" >&2
        exit 1
    fi
    echo "$want" > "$stamp"
fi
# TPC-DS data and query texts come from DuckDB's tpcds extension, whose wheel exists for DuckDB 1.5.5 only:
# both go into a folder of their own, which benchmarks/tpcds_data.py puts on a child interpreter's path when
# the DuckDB in .venv is another release (kept: installed once)
if [ ! -d .venv/tpcds-duckdb/duckdb_extension_tpcds ]; then
    echo ">> installing DuckDB 1.5.5 and its TPC-DS extension into .venv/tpcds-duckdb"
    if ! .venv/bin/python -m pip install --target .venv/tpcds-duckdb duckdb==1.5.5 duckdb-extension-tpcds==1.5.5 \
            >>.venv/install.log 2>&1; then
        rm -rf .venv/tpcds-duckdb
        echo "WARNING: DuckDB's TPC-DS extension could not be installed; tests/spark/test_tpcds.py will skip" >&2
    fi
fi
# the Spark session extension (jvm/src) against the PySpark just installed; says so and goes on without a JDK
bash scripts/build-jvm.sh .venv/bin/python
# numba compiles each decoder once per pair of stored and column type, about 0.85 s apiece on 2 cores, and
# caches it beside its module: compile them here, once per change of the format modules, rather than in
# whichever test or demo step first reads each pair (scripts/warm-kernels.py)
kstamp=.venv/.carbon-ds-kernels
kwant=$( (cat carbon_ds/format/*.py carbon_ds/format/*/*.py; .venv/bin/python -c 'import numba; print(numba.__version__)') | sha256sum | cut -d' ' -f1)
if [ ! -f "$kstamp" ] || [ "$(cat "$kstamp")" != "$kwant" ] || [ ! -d carbon_ds/format/pages/__pycache__ ]; then
    echo ">> compiling carbon-ds's decoders (numba, cached: about a minute, once)"
    if .venv/bin/python scripts/warm-kernels.py; then
        echo "$kwant" > "$kstamp"
    else
        echo "WARNING: the decoders could not be compiled ahead; they compile on first use instead" >&2
    fi
fi
