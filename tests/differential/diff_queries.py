"""A seeded random SQL query generator over the tables of diff_tables.

Predicates are built as small trees so that one tree renders both as SQL text (for Spark and for carbon-ds's
``filter``) and as a pyarrow compute expression (the oracle of ``read_table(filter=)``). Literals are taken
from the rows (values the table holds), next to them (values inside a segment's min/max that no row holds)
and from the edges, so pruning is exercised on every level. Queries name tables as ``{all_t}``; each route
formats them with its own view names.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc
from diff_tables import BIN, BOOL, COMPLEX, DATE, DEC, FLOAT, INT, STR, TS, Table

FILTERABLE = (INT, FLOAT, DEC, STR, DATE, TS, BOOL)


@dataclass
class Query:
    number: int
    kind: str
    text: str  # with {table} placeholders
    ordered: bool = False
    # single-table filter queries also go through carbon_ds.read and read_table
    table: str | None = None
    columns: list[str] | None = None
    pred: tuple | None = None

    def render(self, names: dict[str, str]) -> str:
        return self.text.format(**names)


# ------------------------------------------------------------------ literals
def sql_literal(value, kind: str) -> str:
    if kind == BOOL:
        return "TRUE" if value else "FALSE"
    if kind == STR:
        return "'" + value.replace("'", "''") + "'"
    if kind == DATE:
        return f"DATE '{value.isoformat()}'"
    if kind == TS:
        return f"TIMESTAMP '{value.astimezone(dt.UTC).strftime('%Y-%m-%d %H:%M:%S.%f')}+00:00'"
    if kind == FLOAT:
        return repr(float(value)).replace("e+", "E")
    if kind == DEC:
        return format(value, "f")
    return str(value)


def _near(value, kind: str, rng: random.Random):
    """A value next to ``value`` that the table probably does not hold (between min and max)."""
    if kind == INT:
        return value + rng.choice([-1, 1]) if abs(value) < 2**30 else value
    if kind == FLOAT:
        return value + 0.0005 if abs(value) < 1e300 else value
    if kind == DEC:
        return value
    if kind == STR:
        return value + rng.choice(["a", "\x01", "zz"])
    if kind == DATE:
        return value + dt.timedelta(days=1) if value < dt.date(9999, 12, 31) else value
    if kind == TS:
        return value + dt.timedelta(milliseconds=1) if value.year < 2262 else value
    return value


def literal(table: Table, column: str, rng: random.Random):
    kind = table.kinds[column]
    # the filter syntax has no NaN or infinity literal
    values = [v for v in table.values(column) if not (isinstance(v, float) and (v != v or abs(v) == float("inf")))]
    if kind == BOOL:
        return rng.random() < 0.5
    if not values or rng.random() < 0.1:
        return {INT: 0, FLOAT: 0.0, DEC: Decimal("0.0000"), STR: "", DATE: dt.date(2020, 4, 21),
                TS: dt.datetime(2020, 4, 21, tzinfo=dt.UTC)}[kind]
    value = rng.choice(values)
    if rng.random() < 0.25:
        value = _near(value, kind, rng)
    if kind == DEC and rng.random() < 0.2:
        value = value.quantize(Decimal(1)) if abs(value) < 10**20 else value
    return value


# ------------------------------------------------------------------ predicates
def predicate(table: Table, rng: random.Random, depth: int = 0) -> tuple:
    if depth < 2 and rng.random() < 0.3:
        op = rng.choice(["and", "or", "not"])
        if op == "not":
            return ("not", predicate(table, rng, depth + 1))
        return (op, predicate(table, rng, depth + 1), predicate(table, rng, depth + 1))
    prefer = table.sort + table.partition
    columns = [c for c, k in table.kinds.items() if k in FILTERABLE]
    column = rng.choice(prefer) if prefer and rng.random() < 0.5 else rng.choice(columns)
    kind = table.kinds[column]
    roll = rng.random()
    if roll < 0.08:
        return ("isnull", column, rng.random() < 0.4)
    if kind == BOOL:
        return ("cmp", column, "=", literal(table, column, rng), kind)
    if kind == STR and roll < 0.2:
        base = literal(table, column, rng)
        return ("like", column, base[: rng.randint(0, min(3, len(base)))], rng.random() < 0.25)
    if roll < 0.35:
        values = sorted({literal(table, column, rng) for _ in range(rng.randint(1, 5))}, key=_order_key)
        return ("in", column, values, kind, rng.random() < 0.25)
    if roll < 0.5:
        lo, hi = sorted([literal(table, column, rng), literal(table, column, rng)], key=_order_key)
        return ("between", column, lo, hi, kind, rng.random() < 0.2)
    op = rng.choice(["=", "<", "<=", ">", ">=", "!="]) if kind != FLOAT else rng.choice(["=", "<", "<=", ">", ">="])
    return ("cmp", column, op, literal(table, column, rng), kind)


def _order_key(v):
    return (str(type(v)), v)


def render(p: tuple, alias: str = "") -> str:
    q = f"{alias}." if alias else ""
    tag = p[0]
    if tag in ("and", "or"):
        return f"({render(p[1], alias)} {tag.upper()} {render(p[2], alias)})"
    if tag == "not":
        return f"(NOT {render(p[1], alias)})"
    if tag == "isnull":
        return f"{q}{p[1]} IS {'NOT ' if p[2] else ''}NULL"
    if tag == "like":
        return f"{q}{p[1]} {'NOT ' if p[3] else ''}LIKE {sql_literal(p[2] + '%', STR)}"
    if tag == "in":
        items = ", ".join(sql_literal(v, p[3]) for v in p[2])
        return f"{q}{p[1]} {'NOT ' if p[4] else ''}IN ({items})"
    if tag == "between":
        return (f"{q}{p[1]} {'NOT ' if p[5] else ''}BETWEEN {sql_literal(p[2], p[4])} "
                f"AND {sql_literal(p[3], p[4])}")
    return f"{q}{p[1]} {p[2]} {sql_literal(p[3], p[4])}"


def _scalar(value, typ: pa.DataType) -> pa.Scalar:
    return pa.scalar(value, typ)


def evaluate(p: tuple, rows: pa.Table) -> pa.ChunkedArray:
    """The predicate's three-valued result on ``rows`` with pyarrow compute (SQL's NULL is Arrow's null)."""
    tag = p[0]
    if tag == "and":
        return pc.and_kleene(evaluate(p[1], rows), evaluate(p[2], rows))
    if tag == "or":
        return pc.or_kleene(evaluate(p[1], rows), evaluate(p[2], rows))
    if tag == "not":
        return pc.invert(evaluate(p[1], rows))
    col = rows[p[1]]
    if pa.types.is_floating(col.type):
        col = col.cast(pa.float64())  # SQL compares a float with a double literal as doubles
    if tag == "isnull":
        out = pc.is_null(col, nan_is_null=False)
        return pc.invert(out) if p[2] else out
    if tag == "like":
        out = pc.starts_with(col, p[2])
        return pc.invert(out) if p[3] else out
    if tag == "in":
        hit = pc.is_in(col, value_set=pa.array(p[2], col.type))
        hit = pc.if_else(pc.is_null(col), pa.scalar(None, pa.bool_()), hit)  # NULL IN (...) is NULL
        return pc.invert(hit) if p[4] else hit
    if tag == "between":
        out = pc.and_kleene(pc.greater_equal(col, _scalar(p[2], col.type)), pc.less_equal(col, _scalar(p[3], col.type)))
        return pc.invert(out) if p[5] else out
    fn = {"=": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater,
          ">=": pc.greater_equal}[p[2]]
    return fn(col, _scalar(p[3], col.type))


# ------------------------------------------------------------------ queries
def _projection(table: Table, rng: random.Random) -> list[str]:
    cols = list(table.kinds)
    picked = rng.sample(cols, rng.randint(1, min(5, len(cols))))
    return ["id"] + [c for c in picked if c != "id"]


def _agg_columns(table: Table, rng: random.Random) -> list[str]:
    out = ["count(*) AS n"]
    for c, k in table.kinds.items():
        if k in (INT, DEC) and rng.random() < 0.4:
            out.append(f"sum({c}) AS sum_{c}")
        if k in (INT, FLOAT, DEC, STR, DATE, TS) and rng.random() < 0.3:
            out.append(f"min({c}) AS min_{c}, max({c}) AS max_{c}")
        if k in (FLOAT, STR) and rng.random() < 0.2:
            out.append(f"count(DISTINCT {c}) AS nd_{c}")
    return out


def filter_query(t: Table, rng: random.Random, n: int) -> Query:
    cols = _projection(t, rng)
    pred = predicate(t, rng)
    ordered = rng.random() < 0.3
    text = f"SELECT {', '.join(cols)} FROM {{{t.name}}} WHERE {render(pred)}" + (" ORDER BY id" if ordered else "")
    return Query(n, "filter", text, ordered, t.name, cols, pred)


def aggregate_query(t: Table, rng: random.Random, n: int) -> Query:
    group = rng.choice(t.groups) if rng.random() < 0.7 else None
    aggs = ", ".join(_agg_columns(t, rng))
    where = f" WHERE {render(predicate(t, rng))}" if rng.random() < 0.7 else ""
    if group:
        having = " HAVING count(*) > 1" if rng.random() < 0.3 else ""
        return Query(n, "aggregate", f"SELECT {group}, {aggs} FROM {{{t.name}}}{where} GROUP BY {group}{having}")
    return Query(n, "aggregate", f"SELECT {aggs} FROM {{{t.name}}}{where}")


def join_query(tables: dict[str, Table], rng: random.Random, n: int) -> Query:
    a, b = rng.sample([t for t in tables.values() if t.name != "big_t"], 2)
    if rng.random() < 0.3:
        a = tables["big_t"]
    how = rng.choice(["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN", "LEFT SEMI JOIN", "LEFT ANTI JOIN"])
    ca = rng.choice([c for c in a.kinds if c != "id" and a.kinds[c] in FILTERABLE])
    cb = rng.choice([c for c in b.kinds if c != "id" and b.kinds[c] in FILTERABLE])
    right = [] if "SEMI" in how or "ANTI" in how else ["y.id AS yid", f"y.{cb} AS y_{cb}"]
    where = [f"({render(predicate(a, rng), 'x')})"]
    on = "x.id = y.id"
    if rng.random() < 0.6:
        pb = render(predicate(b, rng), "y")
        if right:
            where.append(f"(y.id IS NULL OR {pb})")
        else:
            on += f" AND {pb}"  # a semi or anti join's right side is only visible in ON
    text = (f"SELECT x.id, x.{ca}, {', '.join(right) or 'x.id AS id2'} FROM {{{a.name}}} x {how} {{{b.name}}} y "
            f"ON {on} WHERE {' AND '.join(where)}")
    return Query(n, "join", text)


def window_query(t: Table, rng: random.Random, n: int) -> Query:
    group = rng.choice(t.groups)
    ints = [c for c, k in t.kinds.items() if k == INT and c != "id"] or ["id"]
    val = rng.choice(ints)
    text = (f"SELECT id, {group}, row_number() OVER (PARTITION BY {group} ORDER BY id) AS rn, "
            f"sum({val}) OVER (PARTITION BY {group} ORDER BY id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS w, "
            f"lag(id) OVER (ORDER BY id) AS prev FROM {{{t.name}}} WHERE {render(predicate(t, rng))}")
    return Query(n, "window", text)


def subquery_query(tables: dict[str, Table], rng: random.Random, n: int) -> Query:
    a, b = rng.sample(list(tables.values()), 2)
    form = rng.choice(["in", "exists", "scalar", "not_in"])
    pa_, pb = render(predicate(a, rng)), render(predicate(b, rng), "y")
    if form == "in":
        text = f"SELECT id FROM {{{a.name}}} WHERE id IN (SELECT y.id FROM {{{b.name}}} y WHERE {pb}) AND {pa_}"
    elif form == "not_in":
        text = f"SELECT id FROM {{{a.name}}} WHERE id NOT IN (SELECT y.id FROM {{{b.name}}} y WHERE {pb}) AND {pa_}"
    elif form == "exists":
        text = (f"SELECT x.id FROM {{{a.name}}} x WHERE EXISTS (SELECT 1 FROM {{{b.name}}} y WHERE y.id = x.id "
                f"AND {pb}) AND {render(predicate(a, rng), 'x')}")
    else:
        text = (f"SELECT id FROM {{{a.name}}} WHERE id > (SELECT coalesce(max(y.id), 0) - 50 FROM {{{b.name}}} y "
                f"WHERE {pb}) AND {pa_}")
    return Query(n, "subquery", text)


def setop_query(tables: dict[str, Table], rng: random.Random, n: int) -> Query:
    a, b = rng.choice(list(tables.values())), rng.choice(list(tables.values()))
    op = rng.choice(["UNION", "UNION ALL", "EXCEPT", "INTERSECT", "EXCEPT ALL", "INTERSECT ALL"])
    text = (f"SELECT id FROM {{{a.name}}} WHERE {render(predicate(a, rng))} {op} "
            f"SELECT id FROM {{{b.name}}} WHERE {render(predicate(b, rng))}")
    return Query(n, "setop", text)


def cte_query(t: Table, rng: random.Random, n: int) -> Query:
    group = rng.choice(t.groups)
    p1, p2 = render(predicate(t, rng)), render(predicate(t, rng))
    text = (f"WITH c AS (SELECT id, {group} FROM {{{t.name}}} WHERE {p1}), "
            f"d AS (SELECT {group}, count(*) AS n FROM {{{t.name}}} WHERE {p2} GROUP BY {group}) "
            f"SELECT c.id, c.{group}, d.n FROM c LEFT JOIN d ON c.{group} = d.{group} "
            f"UNION ALL SELECT id, {group}, -1 FROM c WHERE id % 7 = 0")
    return Query(n, "cte", text)


def raising_query(t: Table, rng: random.Random, n: int) -> Query:
    """Queries Spark's ANSI mode may refuse at run time (a cast or a division), depending on the rows read."""
    strs = [c for c, k in t.kinds.items() if k == STR]
    ints = [c for c, k in t.kinds.items() if k == INT and c != "id"]
    if strs and rng.random() < 0.5:
        expr = f"CAST({rng.choice(strs)} AS INT) AS bad"
    else:
        expr = f"id DIV {rng.choice(ints or ['id'])} AS bad"
    return Query(n, "raising", f"SELECT id, {expr} FROM {{{t.name}}} WHERE {render(predicate(t, rng))}")


def count_query(t: Table, rng: random.Random, n: int) -> Query:
    where = f" WHERE {render(predicate(t, rng))}" if rng.random() < 0.5 else ""
    return Query(n, "count", f"SELECT count(*) FROM {{{t.name}}}{where}")


def counts_query(t: Table, rng: random.Random, n: int) -> Query:
    """Rows counted by keys straight over the table (the Spark extension counts them in the read tasks):
    two group columns (a group column and the id where the table has one), or the day of a timestamp with
    one of them (a single column alone is counted from metadata or by Spark)."""
    keys = rng.sample(t.groups, min(len(t.groups), 2))
    if len(keys) < 2:
        keys.append("id")
    stamps = [c for c, k in t.kinds.items() if k == TS]
    if stamps and rng.random() < 0.6:
        keys = [f"to_date({rng.choice(stamps)})", *keys[:1]]
    having = " HAVING count(*) > 1" if rng.random() < 0.3 else ""
    listed = ", ".join(keys)
    return Query(n, "counts", f"SELECT {listed}, count(*) AS n FROM {{{t.name}}} GROUP BY {listed}{having}")


KINDS = [("filter", 30), ("aggregate", 14), ("join", 12), ("window", 8), ("subquery", 10), ("setop", 8),
         ("cte", 6), ("raising", 5), ("count", 7), ("counts", 8)]


def generate(tables: dict[str, Table], seed: int, count: int) -> list[Query]:
    """``count`` queries: one of each kind first (so a short run still covers every kind), then kinds drawn
    by their weights."""
    rng = random.Random(seed)
    names, weights = zip(*KINDS, strict=True)
    out = []
    for n in range(count):
        kind = names[n] if n < len(names) else rng.choices(names, weights)[0]
        t = rng.choice(list(tables.values()))
        if kind in ("join", "subquery", "setop"):
            out.append(globals()[f"{kind}_query"](tables, rng, n))
        else:
            out.append(globals()[f"{kind}_query"](t, rng, n))
    return out


__all__ = ["BIN", "COMPLEX", "Query", "evaluate", "generate", "render"]
