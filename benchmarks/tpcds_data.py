"""TPC-DS for the benchmarks and tests: data and the 99 query texts from DuckDB's ``tpcds`` extension, the
few rewrites Spark needs to run DuckDB's text, and result comparison.

Data and queries: ``CALL dsdgen(sf = ...)`` and ``tpcds_queries()`` from the ``duckdb-extension-tpcds``
wheel, loaded from the wheel's own file (no network). The wheel exists for DuckDB 1.5 only, so when the
DuckDB imported here is another release, the generation runs in a child interpreter whose path starts with
``<venv>/tpcds-duckdb`` (DuckDB 1.5.5 and the wheel, installed there by scripts/setup.sh). Each table is
written as one Parquet file by DuckDB (``COPY ... (FORMAT parquet)``), the query texts to ``queries.json``.

Dialect: DuckDB's texts are ANSI SQL with a few DuckDB spellings. ``spark_text`` rewrites those Spark reads
differently, keeping each query's meaning (see ``ADAPTATIONS``); ``UNSUPPORTED`` lists what Spark cannot
run here, with the reason.

Nothing here imports Spark or carbon-ds: ``benchmarks/tpcds.py`` and ``tests/spark/test_tpcds.py`` share it.
Run as a script (``python tpcds_data.py SF DIRECTORY``) it generates into DIRECTORY: the child's entry.
"""

from __future__ import annotations

import glob
import importlib.util
import json
import os
import re
import subprocess
import sys

from tpch_queries import compare, parse_numbers  # noqa: F401 - re-exported: one comparison for both benchmarks

TABLES = (
    "call_center", "catalog_page", "catalog_returns", "catalog_sales", "customer", "customer_address",
    "customer_demographics", "date_dim", "household_demographics", "income_band", "inventory", "item",
    "promotion", "reason", "ship_mode", "store", "store_returns", "store_sales", "time_dim", "warehouse",
    "web_page", "web_returns", "web_sales", "web_site",
)
NUMBERS = tuple(range(1, 100))
DUCKDB_RELEASE = "1.5.5"  # the release duckdb-extension-tpcds is built for (pyproject's bench extra)


def _extension_file() -> str | None:
    """The wheel's ``tpcds.duckdb_extension`` built for the DuckDB imported here, or None."""
    try:
        import duckdb
    except ImportError:
        return None
    spec = importlib.util.find_spec("duckdb_extension_tpcds")
    if spec is None or not spec.submodule_search_locations:
        return None
    want = f"v{duckdb.__version__}"
    for root in spec.submodule_search_locations:
        for f in glob.glob(os.path.join(root, "**", "tpcds.duckdb_extension"), recursive=True):
            if want in f.split(os.sep):
                return f
    return None


def side_path() -> str:
    """Where scripts/setup.sh installs DuckDB 1.5.5 with the tpcds wheel, beside this interpreter's venv."""
    return os.path.join(sys.prefix, "tpcds-duckdb")


def has_generator() -> bool:
    """Whether TPC-DS data can be made here (tests skip without it)."""
    return _extension_file() is not None or os.path.isdir(os.path.join(side_path(), "duckdb_extension_tpcds"))


def _generate_here(sf: float, directory: str, threads: int | None) -> None:
    import duckdb

    con = duckdb.connect()
    try:
        con.execute(f"LOAD '{_extension_file()}'")
        if threads:
            con.execute(f"SET threads = {int(threads)}")
        con.execute(f"CALL dsdgen(sf = {sf})")
        for t in TABLES:
            con.execute(f"COPY {t} TO '{os.path.join(directory, t + '.parquet')}' (FORMAT parquet)")
        queries = {int(n): q for n, q in con.execute("SELECT query_nr, query FROM tpcds_queries()").fetchall()}
    finally:
        con.close()
    with open(os.path.join(directory, "queries.json"), "w") as fh:
        json.dump(queries, fh, indent=1)


def generate(sf: float, directory: str, threads: int | None = None) -> dict[str, str]:
    """TPC-DS data at ``sf`` as ``<directory>/<table>.parquet`` plus ``queries.json``; returns
    ``{table: path}``. Cached: a directory whose ``_SF`` marker (written last) says ``sf`` is reused."""
    paths = {t: os.path.join(directory, f"{t}.parquet") for t in TABLES}
    marker = os.path.join(directory, "_SF")
    if os.path.exists(marker):
        with open(marker) as fh:
            if fh.read().strip() == f"{sf:g}" and all(os.path.exists(p) for p in paths.values()):
                return paths
    os.makedirs(directory, exist_ok=True)
    if _extension_file() is not None:
        _generate_here(sf, directory, threads)
    elif has_generator():
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [side_path(), os.path.dirname(os.path.abspath(__file__))]))
        subprocess.run([sys.executable, os.path.abspath(__file__), f"{sf:g}", directory, str(threads or 0)],
                       check=True, env=env)
    else:
        raise RuntimeError(
            f"TPC-DS data needs DuckDB {DUCKDB_RELEASE} with duckdb-extension-tpcds=={DUCKDB_RELEASE}: "
            f"pip install carbon-ds[bench], or scripts/setup.sh (which installs both under {side_path()})")
    with open(marker, "w") as fh:
        fh.write(f"{sf:g}")
    return paths


def queries(directory: str) -> dict[int, str]:
    """The 99 query texts DuckDB gave, as it gave them (``generate`` first)."""
    with open(os.path.join(directory, "queries.json")) as fh:
        return {int(n): q for n, q in json.load(fh).items()}


# ---------------------------------------------------------------------------------------------- dialect

# (pattern, replacement, why): applied in order to every query text
ADAPTATIONS: tuple[tuple[str, str, str], ...] = (
    # Spark reads "..." as a string literal, which cannot name a column; DuckDB's texts (Q16, Q32, Q50, Q62,
    # Q92, Q94, Q95, Q99) quote column aliases such as "order count" or ">120 days" that way, and use no
    # double-quoted string literal anywhere
    (r'"([^"`\n]+)"', r"`\1`", 'double-quoted column aliases become `backquoted` ones'),
)
# query -> why Spark cannot run it here (after ADAPTATIONS)
UNSUPPORTED: dict[int, str] = {}


def spark_text(text: str) -> str:
    """DuckDB's text with ``ADAPTATIONS`` applied and the trailing semicolon dropped."""
    for pattern, repl, _why in ADAPTATIONS:
        text = re.sub(pattern, repl, text)
    return text.strip().rstrip(";").strip()


def ordered_limit(text: str) -> bool:
    """Whether the outermost query has ORDER BY and LIMIT: then the rows kept depend on the order."""
    tail = text.strip().rstrip(";").lower()
    return bool(re.search(r"\border\s+by\b[^()]*\blimit\s+\d+\s*$", tail, re.S))


if __name__ == "__main__":
    _sf, _dir, _threads = float(sys.argv[1]), sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 0
    if _extension_file() is None:
        sys.exit(f"no tpcds.duckdb_extension for this DuckDB on {sys.path[:2]}")
    _generate_here(_sf, _dir, _threads or None)
