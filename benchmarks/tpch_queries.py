"""TPC-H for the benchmarks and tests: the 22 queries as Spark SQL, data generation, result comparison.

Queries: the TPC-H specification's query definitions with its validation substitution parameters
(Q11's FRACTION is 0.0001 / SF, as the specification defines it). The text is Spark SQL that DuckDB also
runs unchanged: date arithmetic as ``date '1998-12-01' - interval 90 days``, Q15's view as a CTE, column
aliases inline instead of Q13's alias list, and Q18's unnamed ``sum(l_quantity)`` named ``sum_quantity``.

Data: DuckDB's ``dbgen`` from the ``duckdb-extension-tpch`` wheel (loaded from the wheel's own file, so no
network is needed; the wheel exists for DuckDB 1.5 only), else ``tpchgen-cli`` (a wheel holding a dbgen
port that writes the same rows), rewritten through Arrow to one Parquet file per table (decimals stay
decimal(15,2), dates are date32, strings plain strings, every column nullable as in a Spark-written table).

Nothing here imports Spark or carbon-ds: ``benchmarks/tpch.py`` and ``tests/spark/test_tpch.py`` share it.
"""

from __future__ import annotations

import datetime as dt
import decimal
import glob
import importlib.util
import math
import os
import re
import shutil
import subprocess
import sys

TABLES = ("region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem")

_QUERIES = {
    1: """
select
    l_returnflag,
    l_linestatus,
    sum(l_quantity) as sum_qty,
    sum(l_extendedprice) as sum_base_price,
    sum(l_extendedprice * (1 - l_discount)) as sum_disc_price,
    sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge,
    avg(l_quantity) as avg_qty,
    avg(l_extendedprice) as avg_price,
    avg(l_discount) as avg_disc,
    count(*) as count_order
from lineitem
where l_shipdate <= date '1998-12-01' - interval 90 days
group by l_returnflag, l_linestatus
order by l_returnflag, l_linestatus
""",
    2: """
select
    s_acctbal, s_name, n_name, p_partkey, p_mfgr, s_address, s_phone, s_comment
from part, supplier, partsupp, nation, region
where p_partkey = ps_partkey
    and s_suppkey = ps_suppkey
    and p_size = 15
    and p_type like '%BRASS'
    and s_nationkey = n_nationkey
    and n_regionkey = r_regionkey
    and r_name = 'EUROPE'
    and ps_supplycost = (
        select min(ps_supplycost)
        from partsupp, supplier, nation, region
        where p_partkey = ps_partkey
            and s_suppkey = ps_suppkey
            and s_nationkey = n_nationkey
            and n_regionkey = r_regionkey
            and r_name = 'EUROPE'
    )
order by s_acctbal desc, n_name, s_name, p_partkey
limit 100
""",
    3: """
select
    l_orderkey,
    sum(l_extendedprice * (1 - l_discount)) as revenue,
    o_orderdate,
    o_shippriority
from customer, orders, lineitem
where c_mktsegment = 'BUILDING'
    and c_custkey = o_custkey
    and l_orderkey = o_orderkey
    and o_orderdate < date '1995-03-15'
    and l_shipdate > date '1995-03-15'
group by l_orderkey, o_orderdate, o_shippriority
order by revenue desc, o_orderdate
limit 10
""",
    4: """
select o_orderpriority, count(*) as order_count
from orders
where o_orderdate >= date '1993-07-01'
    and o_orderdate < date '1993-07-01' + interval 3 months
    and exists (
        select * from lineitem
        where l_orderkey = o_orderkey and l_commitdate < l_receiptdate
    )
group by o_orderpriority
order by o_orderpriority
""",
    5: """
select n_name, sum(l_extendedprice * (1 - l_discount)) as revenue
from customer, orders, lineitem, supplier, nation, region
where c_custkey = o_custkey
    and l_orderkey = o_orderkey
    and l_suppkey = s_suppkey
    and c_nationkey = s_nationkey
    and s_nationkey = n_nationkey
    and n_regionkey = r_regionkey
    and r_name = 'ASIA'
    and o_orderdate >= date '1994-01-01'
    and o_orderdate < date '1994-01-01' + interval 1 year
group by n_name
order by revenue desc
""",
    6: """
select sum(l_extendedprice * l_discount) as revenue
from lineitem
where l_shipdate >= date '1994-01-01'
    and l_shipdate < date '1994-01-01' + interval 1 year
    and l_discount between 0.06 - 0.01 and 0.06 + 0.01
    and l_quantity < 24
""",
    7: """
select supp_nation, cust_nation, l_year, sum(volume) as revenue
from (
    select
        n1.n_name as supp_nation,
        n2.n_name as cust_nation,
        extract(year from l_shipdate) as l_year,
        l_extendedprice * (1 - l_discount) as volume
    from supplier, lineitem, orders, customer, nation n1, nation n2
    where s_suppkey = l_suppkey
        and o_orderkey = l_orderkey
        and c_custkey = o_custkey
        and s_nationkey = n1.n_nationkey
        and c_nationkey = n2.n_nationkey
        and (
            (n1.n_name = 'FRANCE' and n2.n_name = 'GERMANY')
            or (n1.n_name = 'GERMANY' and n2.n_name = 'FRANCE')
        )
        and l_shipdate between date '1995-01-01' and date '1996-12-31'
) as shipping
group by supp_nation, cust_nation, l_year
order by supp_nation, cust_nation, l_year
""",
    8: """
select
    o_year,
    sum(case when nation = 'BRAZIL' then volume else 0 end) / sum(volume) as mkt_share
from (
    select
        extract(year from o_orderdate) as o_year,
        l_extendedprice * (1 - l_discount) as volume,
        n2.n_name as nation
    from part, supplier, lineitem, orders, customer, nation n1, nation n2, region
    where p_partkey = l_partkey
        and s_suppkey = l_suppkey
        and l_orderkey = o_orderkey
        and o_custkey = c_custkey
        and c_nationkey = n1.n_nationkey
        and n1.n_regionkey = r_regionkey
        and r_name = 'AMERICA'
        and s_nationkey = n2.n_nationkey
        and o_orderdate between date '1995-01-01' and date '1996-12-31'
        and p_type = 'ECONOMY ANODIZED STEEL'
) as all_nations
group by o_year
order by o_year
""",
    9: """
select nation, o_year, sum(amount) as sum_profit
from (
    select
        n_name as nation,
        extract(year from o_orderdate) as o_year,
        l_extendedprice * (1 - l_discount) - ps_supplycost * l_quantity as amount
    from part, supplier, lineitem, partsupp, orders, nation
    where s_suppkey = l_suppkey
        and ps_suppkey = l_suppkey
        and ps_partkey = l_partkey
        and p_partkey = l_partkey
        and o_orderkey = l_orderkey
        and s_nationkey = n_nationkey
        and p_name like '%green%'
) as profit
group by nation, o_year
order by nation, o_year desc
""",
    10: """
select
    c_custkey,
    c_name,
    sum(l_extendedprice * (1 - l_discount)) as revenue,
    c_acctbal,
    n_name,
    c_address,
    c_phone,
    c_comment
from customer, orders, lineitem, nation
where c_custkey = o_custkey
    and l_orderkey = o_orderkey
    and o_orderdate >= date '1993-10-01'
    and o_orderdate < date '1993-10-01' + interval 3 months
    and l_returnflag = 'R'
    and c_nationkey = n_nationkey
group by c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment
order by revenue desc
limit 20
""",
    11: """
select ps_partkey, sum(ps_supplycost * ps_availqty) as value
from partsupp, supplier, nation
where ps_suppkey = s_suppkey
    and s_nationkey = n_nationkey
    and n_name = 'GERMANY'
group by ps_partkey
having sum(ps_supplycost * ps_availqty) > (
    select sum(ps_supplycost * ps_availqty) * {fraction}
    from partsupp, supplier, nation
    where ps_suppkey = s_suppkey
        and s_nationkey = n_nationkey
        and n_name = 'GERMANY'
)
order by value desc
""",
    12: """
select
    l_shipmode,
    sum(case when o_orderpriority = '1-URGENT' or o_orderpriority = '2-HIGH' then 1 else 0 end)
        as high_line_count,
    sum(case when o_orderpriority <> '1-URGENT' and o_orderpriority <> '2-HIGH' then 1 else 0 end)
        as low_line_count
from orders, lineitem
where o_orderkey = l_orderkey
    and l_shipmode in ('MAIL', 'SHIP')
    and l_commitdate < l_receiptdate
    and l_shipdate < l_commitdate
    and l_receiptdate >= date '1994-01-01'
    and l_receiptdate < date '1994-01-01' + interval 1 year
group by l_shipmode
order by l_shipmode
""",
    13: """
select c_count, count(*) as custdist
from (
    select c_custkey, count(o_orderkey) as c_count
    from customer left outer join orders
        on c_custkey = o_custkey and o_comment not like '%special%requests%'
    group by c_custkey
) as c_orders
group by c_count
order by custdist desc, c_count desc
""",
    14: """
select
    100.00 * sum(case when p_type like 'PROMO%' then l_extendedprice * (1 - l_discount) else 0 end)
        / sum(l_extendedprice * (1 - l_discount)) as promo_revenue
from lineitem, part
where l_partkey = p_partkey
    and l_shipdate >= date '1995-09-01'
    and l_shipdate < date '1995-09-01' + interval 1 month
""",
    15: """
with revenue0 as (
    select l_suppkey as supplier_no, sum(l_extendedprice * (1 - l_discount)) as total_revenue
    from lineitem
    where l_shipdate >= date '1996-01-01'
        and l_shipdate < date '1996-01-01' + interval 3 months
    group by l_suppkey
)
select s_suppkey, s_name, s_address, s_phone, total_revenue
from supplier, revenue0
where s_suppkey = supplier_no
    and total_revenue = (select max(total_revenue) from revenue0)
order by s_suppkey
""",
    16: """
select p_brand, p_type, p_size, count(distinct ps_suppkey) as supplier_cnt
from partsupp, part
where p_partkey = ps_partkey
    and p_brand <> 'Brand#45'
    and p_type not like 'MEDIUM POLISHED%'
    and p_size in (49, 14, 23, 45, 19, 3, 36, 9)
    and ps_suppkey not in (
        select s_suppkey from supplier where s_comment like '%Customer%Complaints%'
    )
group by p_brand, p_type, p_size
order by supplier_cnt desc, p_brand, p_type, p_size
""",
    17: """
select sum(l_extendedprice) / 7.0 as avg_yearly
from lineitem, part
where p_partkey = l_partkey
    and p_brand = 'Brand#23'
    and p_container = 'MED BOX'
    and l_quantity < (
        select 0.2 * avg(l_quantity) from lineitem where l_partkey = p_partkey
    )
""",
    18: """
select c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, sum(l_quantity) as sum_quantity
from customer, orders, lineitem
where o_orderkey in (
        select l_orderkey from lineitem group by l_orderkey having sum(l_quantity) > 300
    )
    and c_custkey = o_custkey
    and o_orderkey = l_orderkey
group by c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice
order by o_totalprice desc, o_orderdate
limit 100
""",
    19: """
select sum(l_extendedprice * (1 - l_discount)) as revenue
from lineitem, part
where (
        p_partkey = l_partkey
        and p_brand = 'Brand#12'
        and p_container in ('SM CASE', 'SM BOX', 'SM PACK', 'SM PKG')
        and l_quantity >= 1 and l_quantity <= 1 + 10
        and p_size between 1 and 5
        and l_shipmode in ('AIR', 'AIR REG')
        and l_shipinstruct = 'DELIVER IN PERSON'
    ) or (
        p_partkey = l_partkey
        and p_brand = 'Brand#23'
        and p_container in ('MED BAG', 'MED BOX', 'MED PKG', 'MED PACK')
        and l_quantity >= 10 and l_quantity <= 10 + 10
        and p_size between 1 and 10
        and l_shipmode in ('AIR', 'AIR REG')
        and l_shipinstruct = 'DELIVER IN PERSON'
    ) or (
        p_partkey = l_partkey
        and p_brand = 'Brand#34'
        and p_container in ('LG CASE', 'LG BOX', 'LG PACK', 'LG PKG')
        and l_quantity >= 20 and l_quantity <= 20 + 10
        and p_size between 1 and 15
        and l_shipmode in ('AIR', 'AIR REG')
        and l_shipinstruct = 'DELIVER IN PERSON'
    )
""",
    20: """
select s_name, s_address
from supplier, nation
where s_suppkey in (
        select ps_suppkey
        from partsupp
        where ps_partkey in (select p_partkey from part where p_name like 'forest%')
            and ps_availqty > (
                select 0.5 * sum(l_quantity)
                from lineitem
                where l_partkey = ps_partkey
                    and l_suppkey = ps_suppkey
                    and l_shipdate >= date '1994-01-01'
                    and l_shipdate < date '1994-01-01' + interval 1 year
            )
    )
    and s_nationkey = n_nationkey
    and n_name = 'CANADA'
order by s_name
""",
    21: """
select s_name, count(*) as numwait
from supplier, lineitem l1, orders, nation
where s_suppkey = l1.l_suppkey
    and o_orderkey = l1.l_orderkey
    and o_orderstatus = 'F'
    and l1.l_receiptdate > l1.l_commitdate
    and exists (
        select * from lineitem l2
        where l2.l_orderkey = l1.l_orderkey and l2.l_suppkey <> l1.l_suppkey
    )
    and not exists (
        select * from lineitem l3
        where l3.l_orderkey = l1.l_orderkey
            and l3.l_suppkey <> l1.l_suppkey
            and l3.l_receiptdate > l3.l_commitdate
    )
    and s_nationkey = n_nationkey
    and n_name = 'SAUDI ARABIA'
group by s_name
order by numwait desc, s_name
limit 100
""",
    22: """
select cntrycode, count(*) as numcust, sum(c_acctbal) as totacctbal
from (
    select substring(c_phone, 1, 2) as cntrycode, c_acctbal
    from customer
    where substring(c_phone, 1, 2) in ('13', '31', '23', '29', '30', '18', '17')
        and c_acctbal > (
            select avg(c_acctbal)
            from customer
            where c_acctbal > 0.00
                and substring(c_phone, 1, 2) in ('13', '31', '23', '29', '30', '18', '17')
        )
        and not exists (select * from orders where o_custkey = c_custkey)
) as custsale
group by cntrycode
order by cntrycode
""",
}

NUMBERS = tuple(sorted(_QUERIES))


def query(n: int, sf: float = 1.0) -> str:
    """The text of TPC-H query ``n`` (1-22) for scale factor ``sf`` (only Q11 depends on it)."""
    if n not in _QUERIES:
        raise ValueError(f"TPC-H has queries 1 to 22, not {n!r}")
    text = _QUERIES[n].strip()
    if n == 11:
        text = text.format(fraction=f"{0.0001 / sf:.10f}")
    return text


def queries(sf: float = 1.0) -> dict[int, str]:
    return {n: query(n, sf) for n in NUMBERS}


def ordered(text: str) -> bool:
    """True when the query's final result is ordered (its last ORDER BY is outside every parenthesis)."""
    depth = 0
    last = None
    for m in re.finditer(r"[()]|\border\s+by\b", text, re.IGNORECASE):
        tok = m.group(0)
        if tok == "(":
            depth += 1
        elif tok == ")":
            depth -= 1
        elif depth == 0:
            last = m.start()
    return last is not None


def parse_numbers(spec: str | None) -> list[int]:
    """``"1,6,q14"`` / ``"1-5"`` / ``None`` (all) -> sorted query numbers."""
    if spec is None or not spec.strip() or spec.strip().lower() == "all":
        return list(NUMBERS)
    out: set[int] = set()
    for part in spec.split(","):
        part = part.strip().lower().lstrip("q")
        if not part:
            continue
        if "-" in part:
            lo, hi = (int(p.strip().lstrip("q")) for p in part.split("-", 1))
            out.update(range(lo, hi + 1))
        else:
            out.add(int(part))
    bad = sorted(n for n in out if n not in _QUERIES)
    if bad:
        raise ValueError(f"TPC-H has queries 1 to 22; unknown: {bad}")
    return sorted(out)


# ---------------------------------------------------------------------------------------------- data


def tpch_extension() -> str:
    """Path of the ``tpch.duckdb_extension`` file shipped in the installed ``duckdb-extension-tpch`` wheel."""
    import duckdb

    spec = importlib.util.find_spec("duckdb_extension_tpch")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the duckdb-extension-tpch package is not installed (pip install carbon-ds[bench])")
    roots = list(spec.submodule_search_locations)
    found: list[str] = []
    for root in roots:
        found += glob.glob(os.path.join(root, "**", "tpch.duckdb_extension"), recursive=True)
    if not found:
        raise RuntimeError(f"no tpch.duckdb_extension file under {roots}")
    want = f"v{duckdb.__version__}"
    exact = [f for f in found if want in f.split(os.sep)]
    if not exact:
        raise RuntimeError(
            f"duckdb {duckdb.__version__} needs the tpch extension built for {want}; the installed wheel has "
            f"{sorted(found)} (install matching duckdb and duckdb-extension-tpch versions)"
        )
    return exact[0]


def duckdb_connect(threads: int | None = None):
    """A DuckDB connection with the tpch extension loaded from the wheel's file."""
    import duckdb

    con = duckdb.connect()
    con.execute(f"LOAD '{tpch_extension()}'")
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    return con


def tpchgen_cli() -> str:
    """The ``tpchgen-cli`` program installed beside this interpreter (or on PATH)."""
    here = os.path.join(os.path.dirname(sys.executable), "tpchgen-cli")
    found = here if os.path.exists(here) else shutil.which("tpchgen-cli")
    if found is None:
        raise RuntimeError("TPC-H data needs the duckdb-extension-tpch wheel (DuckDB 1.5) or tpchgen-cli "
                           "(pip install tpchgen-cli)")
    return found


def has_generator() -> bool:
    """Whether TPC-H data can be made here (tests skip without it)."""
    try:
        return _has_dbgen() or bool(tpchgen_cli())
    except RuntimeError:
        return False


def _has_dbgen() -> bool:
    try:
        duckdb_connect().close()
        return True
    except Exception:  # noqa: BLE001 - no wheel, or one built for another DuckDB
        return False


def _write(table, path: str, name: str, progress) -> None:
    """One table as Spark would hold it: every column nullable, strings as plain strings."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    fields = [pa.field(f.name, pa.string() if f.type in (pa.string_view(), pa.large_string()) else f.type)
              for f in table.schema]
    table = table.cast(pa.schema(fields))
    pq.write_table(table, path, compression="snappy")
    if progress:
        progress(name, table.num_rows)


def _fmt_sf(sf: float) -> str:
    return f"{sf:g}"


def generate(sf: float, directory: str, threads: int | None = None, progress=None) -> dict[str, str]:
    """TPC-H data at scale factor ``sf`` as ``<directory>/<table>.parquet``; returns ``{table: path}``.

    Cached: a directory that already holds the data of this ``sf`` (its ``_SF`` marker, written last) is
    reused as it is."""
    import pyarrow.parquet as pq

    paths = {t: os.path.join(directory, f"{t}.parquet") for t in TABLES}
    marker = os.path.join(directory, "_SF")
    if os.path.exists(marker):
        with open(marker) as fh:
            if fh.read().strip() == _fmt_sf(sf) and all(os.path.exists(p) for p in paths.values()):
                return paths
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    if _has_dbgen():
        con = duckdb_connect(threads)
        try:
            con.execute(f"CALL dbgen(sf = {sf})")
            for t in TABLES:
                _write(con.execute(f"SELECT * FROM {t}").to_arrow_table(), paths[t], t, progress)
        finally:
            con.close()
    else:
        raw = os.path.join(directory, "_raw")
        subprocess.run([tpchgen_cli(), "parquet", "-s", _fmt_sf(sf), f"--output-dir={raw}"], check=True,
                       stdout=subprocess.DEVNULL)
        for t in TABLES:
            _write(pq.read_table(os.path.join(raw, f"{t}.parquet")), paths[t], t, progress)
        shutil.rmtree(raw, ignore_errors=True)
    with open(marker, "w") as fh:
        fh.write(_fmt_sf(sf))
    return paths


def duckdb_over_parquet(locations: dict[str, str], threads: int | None = None):
    """A DuckDB connection with one view per table over Parquet (a file, or a folder of ``*.parquet``)."""
    import duckdb

    con = duckdb.connect()
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    for t, loc in locations.items():
        pattern = os.path.join(loc, "*.parquet") if os.path.isdir(loc) else loc
        con.execute(f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{pattern}')")
    return con


def carbon_create_sql(name: str, fields: list[tuple[str, str]], path: str) -> str:
    """``CREATE EXTERNAL TABLE IF NOT EXISTS`` over an existing carbondata folder, for ``carbon_ds.sql``.

    ``fields``: (column, Spark SQL type) pairs, e.g. ``[(f.name, f.dataType.simpleString()) for f in
    df.schema]``."""
    cols = ", ".join(f"`{c}` {t.upper()}" for c, t in fields)
    loc = path.replace("\\", "\\\\").replace("'", "\\'")
    return f"CREATE EXTERNAL TABLE IF NOT EXISTS {name} ({cols}) STORED AS carbondata LOCATION '{loc}'"


# ---------------------------------------------------------------------------------------------- results

REL_TOL = 1e-6
ABS_TOL = 1e-9


def _number(v) -> bool:
    return isinstance(v, (int, float, decimal.Decimal)) and not isinstance(v, bool)


def _value(v):
    if isinstance(v, dt.datetime) and v.time() == dt.time(0) and v.tzinfo is None:
        return v.date()
    return v


def _row(r) -> tuple:
    return tuple(_value(v) for v in r)


def _half_unit(v) -> float:
    """Half a unit in the last place of a decimal (an engine that rounds an average to the type's scale
    is off by up to this much from one that computes it in floating point)."""
    if isinstance(v, decimal.Decimal) and v.is_finite():
        exp = v.as_tuple().exponent
        return 0.5 * 10.0**exp if isinstance(exp, int) and exp < 0 else 0.0
    return 0.0


def _same_value(a, b) -> bool:
    if _number(a) and _number(b):
        x, y = float(a), float(b)
        if math.isnan(x) or math.isnan(y):
            return math.isnan(x) and math.isnan(y)
        tol = max(REL_TOL * max(abs(x), abs(y)), ABS_TOL, _half_unit(a) * 1.0001, _half_unit(b) * 1.0001)
        return abs(x - y) <= tol
    return a == b


def _sort_key(row: tuple) -> tuple:
    key = []
    for v in row:
        if v is None:
            key.append((0, ""))
        elif _number(v):
            key.append((1, float(f"{float(v):.6g}")))
        else:
            key.append((2, str(v)))
    return tuple(key)


def _first_difference(a: list[tuple], b: list[tuple]) -> str | None:
    if len(a) != len(b):
        return f"{len(a)} rows vs {len(b)} rows"
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if len(x) != len(y):
            return f"row {i}: {len(x)} columns vs {len(y)} columns"
        for j, (u, v) in enumerate(zip(x, y, strict=True)):
            if not _same_value(u, v):
                return f"row {i} column {j}: {u!r} vs {v!r} (rows {x!r} vs {y!r})"
    return None


def compare(a, b, is_ordered: bool) -> tuple[bool, str | None]:
    """Compare two results (sequences of rows: Spark Rows, tuples from DuckDB).

    Numbers agree to 1e-6 relative, or to half a unit in the last digit of a decimal (an average Spark
    rounds to its decimal scale against DuckDB's floating-point one). With ``is_ordered`` the row order
    must match too; the same rows in another order (which ties in the ORDER BY allow) count as equal,
    with a note saying so. Returns ``(equal, note)``, the note naming the first difference."""
    x = [_row(r) for r in a]
    y = [_row(r) for r in b]
    if is_ordered:
        diff = _first_difference(x, y)
        if diff is None:
            return True, None
    sx, sy = sorted(x, key=_sort_key), sorted(y, key=_sort_key)
    sdiff = _first_difference(sx, sy)
    if sdiff is not None:
        return False, (diff if is_ordered else sdiff)
    if is_ordered:
        return True, f"same rows in a different order (ties in ORDER BY?): {diff}"
    return True, None
