"""Materialized views without Spark (carbon_ds.table.ops.views): the view's rows against the SELECT computed
afresh from the main table's rows, after appends, added Parquet segments, delete, update, overwrite,
compaction and DELETE SEGMENT, with timeseries in UTC and in a zone with daylight saving.

Oracle: the main table's rows as pyarrow reads them (``to_arrow``), grouped in plain Python; timeseries
truncated with ``zoneinfo`` in the view's zone (weeks start on Monday, as Spark's ``date_trunc('week')``).
"""

from __future__ import annotations

import datetime as dt
import os
import random
import warnings
from collections import defaultdict
from zoneinfo import ZoneInfo

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from carbon_ds.ddl.materialized_views import parse_statement, view_query
from carbon_ds.errors import CarbonOptionError
from carbon_ds.fs import Storage
from carbon_ds.table.meta.status import tablestatus
from carbon_ds.table.meta.status.tablestatus import LoadDetail
from carbon_ds.table.ops import views
from carbon_ds.table.ops.segments import manage as segment_ops
from carbon_ds.table.read.scan import Scan
from carbon_ds.table.table import CarbonTable

SCHEMA = pa.schema([("brand", pa.string()), ("ts", pa.timestamp("us", tz="UTC")), ("speed", pa.int32()),
                    ("temp", pa.float64())])
QUERY = ("SELECT brand, timeseries(ts, '{g}') AS t, sum(speed) AS s, count(*) AS n, count(temp) AS nt, "
         "avg(temp) AS a, min(speed) AS lo, max(temp) AS hi FROM tel WHERE speed <> 13 GROUP BY brand, "
         "timeseries(ts, '{g}')")


def _batch(rng: random.Random, n: int, start: dt.datetime) -> pa.Table:
    return pa.table({
        "brand": [rng.choice(["a", "b", "c", None]) for _ in range(n)],
        "ts": [start + dt.timedelta(minutes=rng.randrange(0, 60 * 24 * 70)) for _ in range(n)],
        "speed": [rng.choice([None, *range(0, 40)]) for _ in range(n)],
        "temp": [rng.choice([None, rng.uniform(-10, 40)]) for _ in range(n)],
    }, schema=SCHEMA)


def _floor(ts: dt.datetime, g: str, zone: str) -> dt.datetime:
    local = ts.astimezone(ZoneInfo(zone))
    if g == "minute":
        local = local.replace(second=0, microsecond=0)
    elif g == "hour":
        local = local.replace(minute=0, second=0, microsecond=0)
    else:
        day = local.date()
        if g == "week":
            day -= dt.timedelta(days=day.weekday())
        elif g == "month":
            day = day.replace(day=1)
        elif g == "year":
            day = day.replace(month=1, day=1)
        local = dt.datetime.combine(day, dt.time(), ZoneInfo(zone))
    return local.astimezone(dt.UTC)


def _oracle(main: CarbonTable, g: str, zone: str) -> list[tuple]:
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in main.to_arrow().to_pylist():
        if r["speed"] is None or r["speed"] == 13:  # WHERE speed <> 13: NULL is not kept
            continue
        groups[(r["brand"], _floor(r["ts"], g, zone))].append(r)
    out = []
    for (brand, t), rows in groups.items():
        speeds = [r["speed"] for r in rows if r["speed"] is not None]
        temps = [r["temp"] for r in rows if r["temp"] is not None]
        out.append((brand, t, sum(speeds) if speeds else None, len(rows), len(temps),
                    round(sum(temps) / len(temps), 9) if temps else None, min(speeds) if speeds else None,
                    max(temps) if temps else None))
    return sorted(out, key=repr)


def _view(path: str) -> list[tuple]:
    rows = CarbonTable.open(path).to_arrow().select(["brand", "t", "s", "n", "nt", "a", "lo", "hi"]).to_pylist()
    return sorted(((r["brand"], r["t"], r["s"], r["n"], r["nt"], None if r["a"] is None else round(r["a"], 9),
                    r["lo"], r["hi"]) for r in rows), key=repr)


def _load(table: CarbonTable, data: pa.Table) -> None:
    with table.load() as load:
        load.write([data])


@pytest.fixture
def main(tmp_path):
    table = CarbonTable.create(str(tmp_path / "tel"), SCHEMA)
    _load(table, _batch(random.Random(1), 400, dt.datetime(2024, 2, 20, tzinfo=dt.UTC)))
    return table


def _create(tmp_path, main: CarbonTable, g: str = "hour", zone: str = "UTC", mode: str = "on_commit") -> str:
    path = str(tmp_path / f"mv_{g}")
    views.create_view(path, f"default.mv_{g}", main, "default.tel", QUERY.format(g=g), mode, zone)
    return path


def test_on_commit_view_equals_the_query_across_changes(tmp_path, main):
    path = _create(tmp_path, main)
    assert _view(path) == _oracle(main, "hour", "UTC")
    rng = random.Random(2)
    _load(main, _batch(rng, 300, dt.datetime(2024, 3, 1, tzinfo=dt.UTC)))
    folder = tmp_path / "pq"
    folder.mkdir()
    pq.write_table(_batch(rng, 200, dt.datetime(2024, 3, 5, tzinfo=dt.UTC)), str(folder / "p.parquet"))
    main.add_segment(str(folder), format="parquet")
    expected = _oracle(main, "hour", "UTC")
    assert _view(path) == expected
    keys = [(r[0], r[1]) for r in _view(path)]
    assert len(keys) == len(set(keys))  # re-aggregated: one row per group, not one per segment
    state = views.view_status(path)
    assert (state.status, views.definition(path).covered_ids()) == ("enabled", ["0", "1", "2"])

    def stale_then_refreshed(kind: str) -> None:
        assert views.view_status(path).status == "stale"
        assert views.refresh_view(path).kind == kind
        assert _view(path) == _oracle(main, "hour", "UTC")
        assert views.view_status(path).status == "enabled"

    main.delete("speed = 5")
    stale_then_refreshed("full")
    main.update({"speed": 99}, where="brand = 'a'")
    stale_then_refreshed("full")
    main.compact("major")
    stale_then_refreshed("full")
    main.delete_segments(["2"])
    stale_then_refreshed("full")
    with main.load(overwrite=True) as load:  # the overwrite's commit rebuilds the on_commit view
        load.write([_batch(rng, 100, dt.datetime(2024, 4, 1, tzinfo=dt.UTC))])
    assert views.view_status(path).status == "enabled"
    assert _view(path) == _oracle(main, "hour", "UTC")


@pytest.mark.parametrize("zone", ["UTC", "America/New_York"])
@pytest.mark.parametrize("g", ["minute", "hour", "day", "week", "month", "year"])
def test_timeseries_granularities_in_the_views_zone(tmp_path, main, g, zone):
    path = _create(tmp_path, main, g, zone, mode="on_manual")
    _load(main, _batch(random.Random(3), 200, dt.datetime(2024, 3, 9, tzinfo=dt.UTC)))  # across DST
    assert views.view_status(path).status == "stale"
    done = views.refresh_view(path)
    assert (done.kind, done.segments) == ("incremental", ["1"])
    assert _view(path) == _oracle(main, g, zone)


def test_empty_main_table_and_filter_matching_nothing(tmp_path):
    main = CarbonTable.create(str(tmp_path / "tel"), SCHEMA)
    path = _create(tmp_path, main)
    assert _view(path) == [] and views.view_status(path).status == "enabled"
    _load(main, _batch(random.Random(4), 50, dt.datetime(2024, 1, 1, tzinfo=dt.UTC)))
    assert _view(path) == _oracle(main, "hour", "UTC")


@pytest.mark.parametrize("query, refused", [
    ("SELECT brand, sum(speed) FROM a JOIN b ON a.x = b.x GROUP BY brand", "write each column as alias.column"),
    ("SELECT a.brand, sum(a.speed) FROM a FULL JOIN b ON a.x = b.x GROUP BY a.brand", "FULL JOIN (only inner"),
    ("SELECT a.brand, sum(a.speed) FROM a, b GROUP BY a.brand", "a view reads one table"),
    ("SELECT a.brand, sum(a.speed) FROM a JOIN b ON a.x = c.x GROUP BY a.brand", "the join condition"),
    ("SELECT brand, count(DISTINCT speed) FROM t GROUP BY brand", "count(DISTINCT ...)"),
    ("SELECT brand, sum(speed) FROM t GROUP BY brand HAVING sum(speed) > 1", "HAVING"),
    ("SELECT brand, sum(speed) FROM t GROUP BY brand ORDER BY brand", "ORDER"),
    ("SELECT brand, sum(speed) FROM t GROUP BY brand LIMIT 3", "LIMIT"),
    ("SELECT brand, sum(speed + 1) FROM t GROUP BY brand", "sum of 'speed + 1'"),
    ("SELECT brand, stddev(speed) FROM t GROUP BY brand", "function stddev()"),
    ("SELECT brand, speed, sum(speed) FROM t GROUP BY brand", "column speed in the SELECT list but not in GROUP BY"),
    ("SELECT brand, sum(speed) FROM (SELECT * FROM t) GROUP BY brand", "subquery"),
    ("SELECT brand FROM t GROUP BY brand", "without an aggregate"),
    ("SELECT sum(speed) FROM t", "without GROUP BY"),
    ("SELECT timeseries(ts, 'second'), sum(speed) FROM t GROUP BY timeseries(ts, 'second')", "granularity 'second'"),
    ("SELECT * FROM t GROUP BY brand", "SELECT *"),
])
def test_refused_queries_name_what_is_not_supported(query, refused):
    with pytest.raises(CarbonOptionError, match="not supported") as err:
        view_query(query)
    assert refused in str(err.value)


def test_statements_parse():
    create = parse_statement("create materialized view if not exists db.`m v` properties('REFRESH_TRIGGER_MODE'="
                             "'ON_MANUAL') as select a, sum(b) from t group by a")
    assert (create.db, create.name, create.if_not_exists, create.refresh_mode) == ("db", "m v", True, "on_manual")
    assert create.query == "select a, sum(b) from t group by a"
    assert parse_statement("SHOW MATERIALIZED VIEWS ON TABLE db.t").table == "t"
    assert parse_statement("DROP MATERIALIZED VIEW IF EXISTS m").if_exists
    assert parse_statement("REFRESH MATERIALIZED VIEW m").name == "m"
    assert parse_statement("CREATE VIEW v AS SELECT 1") is None
    with pytest.raises(CarbonOptionError, match="'refresh_trigger_mode' must be"):
        parse_statement("CREATE MATERIALIZED VIEW m PROPERTIES('refresh_trigger_mode'='sometimes') AS SELECT 1")
    with pytest.raises(CarbonOptionError, match="expected REFRESH MATERIALIZED VIEW <name>"):
        parse_statement("REFRESH MATERIALIZED VIEW")


def test_incremental_refresh_reads_only_the_new_segments(tmp_path, main, monkeypatch):
    """A refresh after an append opens no file of a segment the view already covers, and gives the rows a
    full rebuild gives."""
    _load(main, _batch(random.Random(5), 300, dt.datetime(2024, 3, 1, tzinfo=dt.UTC)))
    path = _create(tmp_path, main, mode="on_manual")
    _load(main, _batch(random.Random(6), 200, dt.datetime(2024, 3, 20, tzinfo=dt.UTC)))
    opened: list[str] = []
    for method in ("open", "read_bytes"):
        real = getattr(Storage, method)

        def spy(self, file, _real=real):
            opened.append(file)
            return _real(self, file)
        monkeypatch.setattr(Storage, method, spy)
    done = views.refresh_view(path)
    monkeypatch.undo()
    assert (done.kind, done.segments) == ("incremental", ["2"])
    fact = os.path.join(main.path, "Fact", "Part0")
    main_files = [f for f in opened if f.startswith(fact)]
    segments = {os.path.relpath(f, fact).split(os.sep)[0] for f in main_files}
    assert segments == {"Segment_2"}, main_files
    assert any(f.endswith(".carbondata") for f in main_files)
    incremental = _view(path)
    assert incremental == _oracle(main, "hour", "UTC")
    assert views.refresh_view(path, full=True).kind == "full"
    assert _view(path) == incremental


def test_a_streaming_segment_warns_once_not_per_load(tmp_path, main):
    """Each micro-batch of a stream commits a load; a view that cannot cover a CarbonData streaming segment
    says so once (kept in the view's folder, so batches committed by other processes stay quiet too), and
    again once the reason changes."""
    path = _create(tmp_path, main)
    with main.edit_status("test: a CarbonData stream writes segment 5") as edit:
        edit.entries.append(LoadDetail(name="5", status=tablestatus.STREAMING, file_format="ROW_V1"))
        edit.commit()
    rng = random.Random(7)
    with pytest.warns(UserWarning, match="streaming segment") as said:
        for _ in range(3):
            _load(main, _batch(rng, 20, dt.datetime(2024, 3, 1, tzinfo=dt.UTC)))
    assert len([w for w in said if "streaming segment" in str(w.message)]) == 1
    assert views.view_status(path).status == "stale"
    with main.edit_status("test: the stream's segment handed off") as edit:
        edit.entries[:] = [e for e in edit.entries if e.name != "5"]
        edit.commit()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # refreshed: no warning
        _load(main, _batch(rng, 20, dt.datetime(2024, 3, 2, tzinfo=dt.UTC)))
    assert views.view_status(path).status == "enabled"
    assert _view(path) == _oracle(main, "hour", "UTC")


def test_refresh_cleans_what_it_replaced(tmp_path, main):
    """Each refresh replaces the view's segment; the replaced one is cleaned as CLEAN FILES cleans it, so the
    view's tablestatus stays bounded however many refreshes run, while a read planned before the refreshes
    still reads its rows (from the view's trash, within the retention)."""
    path = _create(tmp_path, main, mode="on_manual")
    view = CarbonTable.open(path)
    planned = Scan(path, ["brand", "t", "s", "n"])
    planned.plan()  # pinned to the view's first segment
    before = sorted(view.to_arrow(["brand", "t", "s", "n"]).to_pylist(), key=repr)
    rng = random.Random(8)
    refreshes = 9
    for i in range(refreshes):
        _load(main, _batch(rng, 40, dt.datetime(2024, 3, 1 + i, tzinfo=dt.UTC)))
        done = views.refresh_view(path, full=i % 3 == 2)
        assert done.kind == ("full" if i % 3 == 2 else "incremental")
        entries = view.load_details()
        # the current segment, and at most segment 0 kept invisible (CLEAN FILES keeps 0 and the highest id)
        assert len(entries) <= 2, [(e.name, e.status) for e in entries]
        assert [e.name for e in entries if e.readable] == [views.definition(path).view_segment]
        assert _view(path) == _oracle(main, "hour", "UTC")
    history = segment_ops.read_history(view)
    assert sorted(int(e.name) for e in history) == list(range(1, refreshes))  # 0 stays, invisible
    assert all(e.status == tablestatus.MARKED_FOR_DELETE for e in history)
    trash = tmp_path / "mv_hour" / ".Trash"
    assert len(os.listdir(trash)) == refreshes  # one trash run per refresh, kept for the retention
    assert sorted(planned.to_arrow().to_pylist(), key=repr) == before
    assert before != sorted(view.to_arrow(["brand", "t", "s", "n"]).to_pylist(), key=repr)
    _load(main, _batch(rng, 40, dt.datetime(2024, 4, 1, tzinfo=dt.UTC)))
    views.refresh_view(path, retention_days=0)  # expired runs go; this run's stays until it is older
    assert len(os.listdir(trash)) == 1
    assert _view(path) == _oracle(main, "hour", "UTC")
    with pytest.raises(CarbonOptionError, match="between 0 and 365"):
        views.refresh_view(path, retention_days=400)


FACT = pa.schema([("store", pa.int32()), ("qty", pa.int32())])
DIM = pa.schema([("id", pa.int64()), ("region", pa.string())])
JOIN_QUERY = ("SELECT d.region, sum(f.qty) AS total, count(*) AS n, min(f.qty) AS lo "
              "FROM sales f JOIN stores d ON f.store = d.id GROUP BY d.region")


def _join_oracle(fact: CarbonTable, dim: CarbonTable) -> list[tuple]:
    """The inner join in plain Python: a NULL key matches nothing, a key in two dimension rows counts twice."""
    groups: dict[str | None, list[int | None]] = defaultdict(list)
    dims = dim.to_arrow().to_pylist()
    for f in fact.to_arrow().to_pylist():
        for d in dims:
            if f["store"] is not None and f["store"] == d["id"]:
                groups[d["region"]].append(f["qty"])
    return sorted(((k, sum(q for q in v if q is not None) if any(q is not None for q in v) else None, len(v),
                    min((q for q in v if q is not None), default=None)) for k, v in groups.items()), key=repr)


def _join_view(path: str) -> list[tuple]:
    rows = CarbonTable.open(path).to_arrow().to_pylist()
    return sorted(((r["region"], r["total"], r["n"], r["lo"]) for r in rows), key=repr)


def test_view_over_a_join_refreshes_fact_loads_incrementally_and_rebuilds_after_a_dimension_change(tmp_path):
    rng = random.Random(7)

    def facts(n: int) -> pa.Table:
        return pa.table({"store": [rng.choice([None, 1, 2, 3, 4, 9]) for _ in range(n)],
                         "qty": [rng.choice([None, *range(-3, 20)]) for _ in range(n)]}, schema=FACT)

    fact = CarbonTable.create(str(tmp_path / "sales"), FACT)
    dim = CarbonTable.create(str(tmp_path / "stores"), DIM)
    _load(fact, facts(200))
    _load(dim, pa.table({"id": [1, 2, 3, 3, None], "region": ["n", "s", "n", "e", "x"]}, schema=DIM))
    path = str(tmp_path / "mv_join")
    views.create_view(path, "default.mv_join", fact, "default.sales", JOIN_QUERY, "on_manual", "UTC",
                      [("default.stores", dim)])
    assert _join_view(path) == _join_oracle(fact, dim)
    assert views.views_of(dim) == [views.views_of(fact)[0]] and views.views_of(dim, as_main=True) == []
    _load(fact, facts(80))
    assert views.view_status(path).status == "stale"
    done = views.refresh_view(path)
    assert (done.kind, done.segments) == ("incremental", ["1"])
    assert _join_view(path) == _join_oracle(fact, dim)
    dim.update({"region": "w"}, where="id = 2")
    state = views.view_status(path)
    assert state.status == "stale" and "dimension table default.stores changed" in state.reason
    assert views.refresh_view(path).kind == "full"
    assert _join_view(path) == _join_oracle(fact, dim)
    assert views.view_status(path).status == "enabled"
    views.drop_view(path)
    assert views.linked_views(dim) == [] and views.linked_views(fact) == []
