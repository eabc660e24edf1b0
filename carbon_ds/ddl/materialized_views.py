"""CarbonData's materialized-view statements and the SELECT shapes a view may be defined by.

Statements (keywords case-insensitive, names may be `back-quoted`):
    CREATE MATERIALIZED VIEW [IF NOT EXISTS] [db.]name [PROPERTIES ('key'='value', ...)] AS SELECT ...
    REFRESH MATERIALIZED VIEW [db.]name
    SHOW MATERIALIZED VIEWS [ON TABLE [db.]table]
    DROP MATERIALIZED VIEW [IF EXISTS] [db.]name

``view_query`` reads the SELECT: one main table, or a fact table inner-joined to dimension tables on
column equalities (``FROM fact f JOIN dim d ON f.k = d.k``, columns then qualified by the tables' aliases),
grouping columns and ``timeseries(col, 'granularity')``, the aggregates sum / count / min / max / avg of a
column (``count(*)``), a WHERE filter (one table only). Anything else is refused by name
(CarbonOptionError), so a view never stands for a query it does not compute.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from carbon_ds.errors import CarbonOptionError
from carbon_ds.expressions.lexer import FILTER, Token, scan

__all__ = ["AGGREGATES", "GRANULARITIES", "Aggregate", "CreateMaterializedView", "DropMaterializedView",
           "Grouping", "Join", "RefreshMaterializedView", "ShowMaterializedViews", "ViewQuery", "parse_statement",
           "view_query"]

GRANULARITIES = ("minute", "hour", "day", "week", "month", "year")
AGGREGATES = ("sum", "count", "min", "max", "avg")
REFRESH_MODES = ("on_commit", "on_manual")


@dataclass(frozen=True)
class CreateMaterializedView:
    db: str | None
    name: str
    query: str  # the SELECT as written
    properties: dict[str, str] = field(default_factory=dict)
    if_not_exists: bool = False

    @property
    def refresh_mode(self) -> str:
        return self.properties.get("refresh_trigger_mode", "on_commit")


@dataclass(frozen=True)
class RefreshMaterializedView:
    db: str | None
    name: str


@dataclass(frozen=True)
class ShowMaterializedViews:
    db: str | None = None  # ON TABLE's database
    table: str | None = None  # ON TABLE's table; None: every view


@dataclass(frozen=True)
class DropMaterializedView:
    db: str | None
    name: str
    if_exists: bool = False


_NAME = r"(?:`[^`]+`|[A-Za-z_][\w$]*)"
_QNAME = rf"(?P<name>{_NAME}(?:\.{_NAME})?)"
_CREATE = re.compile(rf"^\s*CREATE\s+MATERIALIZED\s+VIEW\s+(?P<ine>IF\s+NOT\s+EXISTS\s+)?{_QNAME}\s*"
                     r"(?:PROPERTIES\s*\((?P<props>(?:'[^']*'|\"[^\"]*\"|[^()'\"])*)\)\s*)?"
                     r"AS\s+(?P<query>.+?)\s*;?\s*$", re.IGNORECASE | re.S)
_REFRESH = re.compile(rf"^\s*REFRESH\s+MATERIALIZED\s+VIEW\s+{_QNAME}\s*;?\s*$", re.IGNORECASE)
_SHOW = re.compile(rf"^\s*SHOW\s+MATERIALIZED\s+VIEWS(?:\s+ON\s+TABLE\s+{_QNAME})?\s*;?\s*$", re.IGNORECASE)
_DROP = re.compile(rf"^\s*DROP\s+MATERIALIZED\s+VIEW\s+(?P<ie>IF\s+EXISTS\s+)?{_QNAME}\s*;?\s*$", re.IGNORECASE)
_PROPERTY = re.compile(r"\s*(['\"])(?P<k>[^'\"]+)\1\s*=\s*(['\"])(?P<v>[^'\"]*)\3\s*(?:,|$)")
_FORMS = {
    "CREATE": "CREATE MATERIALIZED VIEW [IF NOT EXISTS] <name> [PROPERTIES ('refresh_trigger_mode'="
              "'on_commit'|'on_manual')] AS SELECT ...",
    "REFRESH": "REFRESH MATERIALIZED VIEW <name>",
    "SHOW": "SHOW MATERIALIZED VIEWS [ON TABLE <table>]",
    "DROP": "DROP MATERIALIZED VIEW [IF EXISTS] <name>",
}


def _split_name(text: str) -> tuple[str | None, str]:
    parts = [p.strip("`") for p in re.findall(r"`[^`]+`|[^.]+", text)]
    return (parts[0], parts[1]) if len(parts) == 2 else (None, parts[0])


def _properties(body: str | None) -> dict[str, str]:
    out: dict[str, str] = {}
    if body is None or not body.strip():
        return out
    pos = 0
    while pos < len(body.rstrip()):
        m = _PROPERTY.match(body, pos)
        if m is None:
            raise CarbonOptionError(f"CREATE MATERIALIZED VIEW: PROPERTIES expected 'key'='value' pairs, found "
                                    f"{body[pos:].strip()!r}")
        out[m.group("k").strip().lower()] = m.group("v").strip()
        pos = m.end()
    unknown = sorted(set(out) - {"refresh_trigger_mode"})
    if unknown:
        raise CarbonOptionError(f"CREATE MATERIALIZED VIEW: unknown propert{'y' if len(unknown) == 1 else 'ies'} "
                                f"{', '.join(unknown)}; supported: 'refresh_trigger_mode'")
    mode = out.get("refresh_trigger_mode")
    if mode is not None:
        out["refresh_trigger_mode"] = mode = mode.lower()
        if mode not in REFRESH_MODES:
            raise CarbonOptionError(f"CREATE MATERIALIZED VIEW: 'refresh_trigger_mode' must be 'on_commit' or "
                                    f"'on_manual', found {mode!r}")
    return out


def parse_statement(text: str):
    """The materialized-view statement ``text`` is, None when it is none of them.

    Raises:
        CarbonOptionError: it starts like one (``CREATE MATERIALIZED VIEW`` ...) but is malformed.
    """
    words = [w.upper() for w in re.findall(r"[A-Za-z_]+", text[:120])[:3]]
    if words[1:3] not in (["MATERIALIZED", "VIEW"], ["MATERIALIZED", "VIEWS"]) or words[0] not in _FORMS:
        return None
    head = words[0]
    if head == "CREATE":
        m = _CREATE.match(text)
        if m is not None:
            db, name = _split_name(m.group("name"))
            return CreateMaterializedView(db, name, m.group("query"), _properties(m.group("props")),
                                          bool(m.group("ine")))
    elif head == "REFRESH":
        m = _REFRESH.match(text)
        if m is not None:
            return RefreshMaterializedView(*_split_name(m.group("name")))
    elif head == "SHOW":
        m = _SHOW.match(text)
        if m is not None:
            return ShowMaterializedViews(*_split_name(m.group("name"))) if m.group("name") else ShowMaterializedViews()
    else:
        m = _DROP.match(text)
        if m is not None:
            db, name = _split_name(m.group("name"))
            return DropMaterializedView(db, name, bool(m.group("ie")))
    raise CarbonOptionError(f"expected {_FORMS[head]}, found {text.strip()[:200]!r}")


# ------------------------------------------------------------------------------------------ the SELECT
@dataclass(frozen=True)
class Grouping:
    """A grouping column of the view: ``column``, or ``timeseries(column, granularity)``."""

    name: str  # the view's column
    column: str  # the main table's column
    granularity: str | None = None


@dataclass(frozen=True)
class Aggregate:
    name: str  # the view's column
    func: str  # sum | count | min | max | avg
    column: str | None  # None: count(*)


@dataclass(frozen=True)
class Join:
    """A dimension table inner-joined to the fact (main) table on ``keys``: (fact column, dimension column)."""

    table: str  # as written ([db.]name)
    alias: str
    keys: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class ViewQuery:
    table: str  # the main table as written ([db.]name); the fact table of a join
    groups: tuple[Grouping, ...]
    aggregates: tuple[Aggregate, ...]
    where: str | None  # the WHERE text (a carbon-ds filter string)
    select_order: tuple[str, ...]  # the view's columns in SELECT order
    aliased: frozenset[str] = frozenset()  # the columns named with AS (the others are named by default)
    alias: str | None = None  # the fact table's alias in a join (columns are then written alias.column)
    joins: tuple[Join, ...] = ()

    def locate(self, column: str) -> tuple[int, str]:
        """(table index: 0 the main table, i the i-th join's dimension table; column) of a column as written."""
        if not self.joins:
            return 0, column
        alias, _, name = column.partition(".")
        aliases = [self.alias or "", *(j.alias for j in self.joins)]
        return [a.lower() for a in aliases].index(alias.lower()), name


_CLAUSES = ("SELECT", "FROM", "WHERE", "GROUP", "HAVING", "ORDER", "LIMIT", "UNION", "INTERSECT", "EXCEPT",
            "WINDOW", "CLUSTER", "DISTRIBUTE", "SORT", "LATERAL", "QUALIFY")
_JOIN_KINDS = ("LEFT", "RIGHT", "FULL", "OUTER", "CROSS", "SEMI", "ANTI", "NATURAL")


def _refuse(what: str, query: str) -> CarbonOptionError:
    return CarbonOptionError(
        f"CREATE MATERIALIZED VIEW: {what} is not supported in a materialized view's query; supported: SELECT "
        f"grouping columns, timeseries(col, '{'|'.join(GRANULARITIES)}') and {', '.join(AGGREGATES)} of a column "
        f"(count(*)) FROM one carbondata table [WHERE ...] (or FROM fact f [INNER] JOIN dim d ON f.k = d.k ...) "
        f"GROUP BY the grouping columns; found {query[:200]!r}")


def _top_level(toks: list[Token], query: str) -> dict[str, int]:
    """The index of each clause keyword at parenthesis depth 0 (a nested SELECT is refused)."""
    depth, found = 0, {}
    for i, t in enumerate(toks):
        if t.kind == "punct" and t.text == "(":
            depth += 1
        elif t.kind == "punct" and t.text == ")":
            depth -= 1
        elif t.kind == "word" and t.text.upper() in _CLAUSES:
            word = t.text.upper()
            if depth > 0:
                raise _refuse("a subquery" if word == "SELECT" else f"{word} inside parentheses", query)
            if word in found:
                raise _refuse(f"a second {word}", query)
            found[word] = i
    return found


def _split_commas(toks: list[Token]) -> list[list[Token]]:
    out: list[list[Token]] = [[]]
    depth = 0
    for t in toks:
        if t.kind == "punct" and t.text in "()":
            depth += 1 if t.text == "(" else -1
        if depth == 0 and t.kind == "punct" and t.text == ",":
            out.append([])
        else:
            out[-1].append(t)
    return out


def _column(t: Token, dotted: bool = False) -> str | None:
    """A column name; ``dotted``: also ``alias.column`` (a join view's columns)."""
    return t.text if t.kind in ("word", "ident") and (t.kind == "ident" or dotted or "." not in t.text) else None


def _expression(toks: list[Token], query: str, dotted: bool = False) -> tuple[str, str | None, str | None]:
    """(kind, column, extra) of one expression: ("col", c, None), ("ts", c, granularity), (func, c|None, None)."""
    texts = [t.text for t in toks]
    if len(toks) == 1 and _column(toks[0], dotted) is not None:
        return "col", toks[0].text, None
    if len(toks) >= 3 and toks[0].kind == "word" and texts[1] == "(" and texts[-1] == ")":
        func = toks[0].text.lower()
        args = _split_commas(toks[2:-1])
        if func == "timeseries":
            if (len(args) != 2 or len(args[0]) != 1 or _column(args[0][0], dotted) is None or len(args[1]) != 1
                    or args[1][0].kind != "string"):
                raise _refuse(f"timeseries with arguments {query[toks[1].end:toks[-1].pos]!r} (expected a column "
                              "and a quoted granularity)", query)
            gran = args[1][0].text.strip().lower()
            if gran not in GRANULARITIES:
                raise _refuse(f"timeseries granularity {gran!r}", query)
            return "ts", args[0][0].text, gran
        if func in AGGREGATES:
            if len(args) == 1 and len(args[0]) == 1 and _column(args[0][0], dotted) is not None:
                return func, args[0][0].text, None
            if func == "count" and len(args) == 1 and len(args[0]) == 1 and args[0][0].text in ("*", "1"):
                return func, None, None
            if args and args[0] and args[0][0].is_kw("DISTINCT"):
                raise _refuse(f"{func}(DISTINCT ...) (group the view by the column instead: a query's "
                              "count(DISTINCT column) is then answered from the view's rows, exactly)", query)
            raise _refuse(f"{func} of {query[toks[1].end:toks[-1].pos].strip()!r} (an aggregate takes one column)",
                          query)
        raise _refuse(f"function {toks[0].text}()", query)
    return "?", None, None


def _item(toks: list[Token], query: str, dotted: bool = False) -> tuple[tuple[str, str | None, str | None], str | None]:
    """An expression of the SELECT list and its alias ([AS] alias)."""
    alias = None
    if len(toks) >= 2 and _column(toks[-1]) is not None and (toks[-2].is_kw("AS") or toks[-2].text == ")"):
        alias = toks[-1].text
        toks = toks[:-2] if toks[-2].is_kw("AS") else toks[:-1]
    expr = _expression(toks, query, dotted)
    if expr[0] == "?":
        shown = query[toks[0].pos:toks[-1].end] if toks else ""
        raise _refuse(f"the expression {shown!r}", query)
    return expr, alias


def view_query(query: str) -> ViewQuery:
    """The view a SELECT defines (see the module's docstring), or CarbonOptionError naming what is not supported."""
    toks = list(scan(query, FILTER, strict=False))
    if not toks or not toks[0].is_kw("SELECT"):
        raise _refuse("a query that is not a SELECT", query)
    at = _top_level(toks, query)
    for word in ("HAVING", "ORDER", "LIMIT", "UNION", "INTERSECT", "EXCEPT", "WINDOW", "CLUSTER", "DISTRIBUTE",
                 "SORT", "LATERAL", "QUALIFY"):
        if word in at:
            raise _refuse(word, query)
    if "FROM" not in at:
        raise _refuse("a SELECT without FROM", query)
    if "GROUP" not in at:
        raise _refuse("a SELECT without GROUP BY", query)
    if at["SELECT"] != 0 or not at["SELECT"] < at["FROM"] < at.get("WHERE", at["GROUP"]) <= at["GROUP"]:
        raise _refuse("clauses out of order", query)
    select = toks[1:at["FROM"]]
    if select and select[0].is_kw("DISTINCT", "ALL"):
        raise _refuse(f"SELECT {select[0].text.upper()}", query)
    source = toks[at["FROM"] + 1:at.get("WHERE", at["GROUP"])]
    if any(t.is_kw("JOIN") for t in source):
        table, fact_alias, joins = _joins(source, query)
    elif len(source) != 1 or source[0].kind not in ("word", "ident"):
        shown = query[source[0].pos:source[-1].end] if source else "nothing"
        raise _refuse(f"FROM {shown!r} (a view reads one table, or a fact table joined to dimension tables; "
                      "no alias without a join, no subquery)", query)
    else:
        table, fact_alias, joins = source[0].text, None, ()
    dotted = bool(joins)
    where = None
    if "WHERE" in at:
        w = toks[at["WHERE"] + 1:at["GROUP"]]
        if not w:
            raise _refuse("an empty WHERE", query)
        if joins:
            raise _refuse("WHERE in a view over a join (filter the query instead: conditions on the view's "
                          "grouping columns are applied to its rows)", query)
        where = query[w[0].pos:w[-1].end]
    by = toks[at["GROUP"] + 1:]
    if not by or not by[0].is_kw("BY") or len(by) < 2:
        raise _refuse("GROUP without BY and its columns", query)
    group_exprs = [_expression(g, query, dotted) for g in _split_commas(by[1:])]
    if any(g[0] not in ("col", "ts") for g in group_exprs):
        raise _refuse("GROUP BY of an aggregate or expression", query)
    groups: list[Grouping] = []
    aggregates: list[Aggregate] = []
    order: list[str] = []
    aliased: set[str] = set()
    for part in _split_commas(select):
        if not part:
            raise _refuse("an empty SELECT item", query)
        if len(part) == 1 and part[0].text == "*":
            raise _refuse("SELECT *", query)
        (kind, col, extra), alias = _item(part, query, dotted)
        if alias is not None:
            aliased.add(alias)
        if kind in ("col", "ts"):
            if (kind, col.lower(), extra) not in {(k, c.lower(), e) for k, c, e in group_exprs}:
                raise _refuse(f"{'column ' + col if kind == 'col' else f'timeseries({col}, {extra!r})'} in the "
                              "SELECT list but not in GROUP BY", query)
            short = col.partition(".")[2] if dotted else col
            name = alias or (short if kind == "col" else f"{short}_{extra}")
            groups.append(Grouping(name, col, extra))
        else:
            name = alias or (f"{kind}_{col.partition('.')[2] if dotted else col}" if col else "count")
            aggregates.append(Aggregate(name, kind, col))
        order.append(name)
    missing = [f"{c}" if k == "col" else f"timeseries({c}, {e!r})" for k, c, e in group_exprs
               if (k, c.lower(), e) not in {("col" if g.granularity is None else "ts", g.column.lower(), g.granularity)
                                            for g in groups}]
    if missing:
        raise _refuse(f"GROUP BY {', '.join(missing)} without it in the SELECT list", query)
    if not aggregates:
        raise _refuse("a SELECT without an aggregate", query)
    if (len({g.granularity for g in groups if g.granularity}) > 1 or
            len({g.column.lower() for g in groups if g.granularity}) > 1):
        raise _refuse("timeseries of more than one column or granularity", query)
    lower = [n.lower() for n in order]
    dup = sorted({n for n in lower if lower.count(n) > 1})
    if dup:
        raise CarbonOptionError(f"CREATE MATERIALIZED VIEW: the view's column names must differ, found "
                                f"{', '.join(dup)} more than once; give aliases (AS name)")
    result = ViewQuery(table, tuple(groups), tuple(aggregates), where, tuple(order), frozenset(aliased),
                       fact_alias, joins)
    for c in [g.column for g in groups] + [a.column for a in aggregates if a.column]:
        if dotted and ("." not in c or c.partition(".")[0].lower() not in
                       {a.lower() for a in [fact_alias or "", *(j.alias for j in joins)]}):
            raise _refuse(f"column {c!r} (in a view over a join, write each column as alias.column, with the alias "
                          "of one of its tables)", query)
    return result


def _table_and_alias(part: list[Token], query: str) -> tuple[str, str]:
    """``table [AS] alias`` (the alias defaults to the table's name)."""
    if part and part[-1].kind in ("word", "ident") and len(part) in (2, 3) and (len(part) == 2 or part[1].is_kw("AS")):
        alias = part[-1].text
        part = part[:1]
    else:
        alias = None
    if len(part) != 1 or part[0].kind not in ("word", "ident") or (alias is not None and "." in alias):
        shown = query[part[0].pos:part[-1].end] if part else "nothing"
        raise _refuse(f"the join source {shown!r} (expected a table and an optional alias)", query)
    return part[0].text, alias or part[0].text.rpartition(".")[2]


def _joins(source: list[Token], query: str) -> tuple[str, str, tuple[Join, ...]]:
    """FROM fact [AS] f [INNER] JOIN dim [AS] d ON f.k = d.k [AND ...] [[INNER] JOIN ...]: each dimension
    table joined to the fact table on equalities of their columns."""
    parts: list[list[Token]] = [[]]
    for t in source:
        if t.is_kw("JOIN"):
            kind = parts[-1][-1] if parts[-1] and parts[-1][-1].is_kw("INNER", *_JOIN_KINDS) else None
            if kind is not None and not kind.is_kw("INNER"):
                raise _refuse(f"{kind.text.upper()} JOIN (only inner joins)", query)
            if kind is not None:
                parts[-1].pop()
            parts.append([])
        elif t.kind == "punct" and t.text in ",()":
            raise _refuse("FROM with a comma, subquery or parentheses (write [INNER] JOIN ... ON ...)", query)
        else:
            parts[-1].append(t)
    fact, fact_alias = _table_and_alias(parts[0], query)
    aliases = [fact_alias.lower()]
    joins: list[Join] = []
    for part in parts[1:]:
        on = next((i for i, t in enumerate(part) if t.is_kw("ON")), None)
        if on is None:
            raise _refuse("JOIN without ON (a view joins on equalities of columns)", query)
        table, alias = _table_and_alias(part[:on], query)
        if alias.lower() in aliases:
            raise _refuse(f"the alias {alias!r} twice (give each table its own alias)", query)
        aliases.append(alias.lower())
        keys: list[tuple[str, str]] = []
        for cond in _split_and(part[on + 1:]):
            if (len(cond) != 3 or cond[1].text != "=" or _column(cond[0], True) is None
                    or _column(cond[2], True) is None):
                shown = query[cond[0].pos:cond[-1].end] if cond else "nothing"
                raise _refuse(f"the join condition {shown!r} (expected fact.column = dimension.column, "
                              "joined with AND)", query)
            sides = {cond[0].text.partition(".")[0].lower(): cond[0].text.partition(".")[2],
                     cond[2].text.partition(".")[0].lower(): cond[2].text.partition(".")[2]}
            if set(sides) != {fact_alias.lower(), alias.lower()}:
                raise _refuse(f"the join condition {query[cond[0].pos:cond[-1].end]!r} (each dimension table "
                              f"joins the fact table {fact!r} on alias.column of both)", query)
            keys.append((sides[fact_alias.lower()], sides[alias.lower()]))
        joins.append(Join(table, alias, tuple(keys)))
    return fact, fact_alias, tuple(joins)


def _split_and(toks: list[Token]) -> list[list[Token]]:
    out: list[list[Token]] = [[]]
    for t in toks:
        if t.is_kw("AND"):
            out.append([])
        else:
            out[-1].append(t)
    return out
