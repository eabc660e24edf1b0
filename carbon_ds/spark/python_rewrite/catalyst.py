"""Catalyst through py4j: plan and expression helpers, and predicates translated into carbondata filter text.

The carbondata ``filter`` option is SQL text that carbon_ds.expressions parses; a Catalyst predicate over a
relation's columns becomes that text here when its meaning is the same on every row CarbonData can hold,
and is left to Spark otherwise (Spark evaluates every predicate anyway, so a missing translation costs
pruning, never rows). Used by carbon_ds.spark.python_rewrite.plan_walk.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Any

from carbon_ds.names import SOURCE

INTEGRAL = {"byte": (-(2**7), 2**7 - 1), "short": (-(2**15), 2**15 - 1), "integer": (-(2**31), 2**31 - 1),
            "long": (-(2**63), 2**63 - 1)}
_DIGITS = {"byte": 3, "short": 5, "integer": 10, "long": 19}  # decimal digits of the widest value
_COMPARE = {"EqualTo": "=", "LessThan": "<", "LessThanOrEqual": "<=", "GreaterThan": ">",
            "GreaterThanOrEqual": ">="}
_MIRROR = {"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
MAX_IN_VALUES = 1000  # a longer IN list prunes by its min/max only: never spelled out in the filter text
_EPOCH_DAY = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


# ------------------------------------------------------------------------------------------ py4j helpers


# Every py4j call is a round trip to the JVM, and every JVM object handed to Python costs another one when
# it is released; the helpers below keep both few (a plan walk makes thousands of calls otherwise).


def node_name(node: Any) -> str:
    """The class name of a plan or expression node (``Filter``, ``AttributeReference``)."""
    return str(node.nodeName())


def class_name(obj: Any) -> str:
    """The JVM class name without package, for objects that are not plan or expression nodes."""
    return str(obj.getClass().getSimpleName())


def to_list(seq: Any) -> list[Any]:
    """A Scala collection as a Python list (of py4j objects)."""
    n = seq.size()
    if n == 0:
        return []
    if n == 1:
        return [seq.head()]
    items = seq.toIndexedSeq()  # apply(i) in constant time whatever the collection
    return [items.apply(i) for i in range(n)]


def jvm_class(jvm: Any, name: str) -> Any:
    """The py4j handle of the JVM class ``name`` (fully qualified). py4j resolves ``jvm.a.b.C`` one
    segment at a time, a JVM round trip each; handles are kept per gateway, so that happens once."""
    client = jvm._gateway_client
    hit = _CLASSES.get(name)
    if hit is not None and hit[0] is client:
        return hit[1]
    obj = jvm
    for part in name.split("."):
        obj = getattr(obj, part)
    _CLASSES[name] = (client, obj)
    return obj


def scala_object(jvm: Any, name: str) -> Any:
    """The singleton of a Scala ``object`` (``name`` ends with ``$``)."""
    return getattr(jvm_class(jvm, name), "MODULE$")


_CLASSES: dict[str, tuple[Any, Any]] = {}


# AttributeReference.toString is name#exprId plus a type suffix (L for bigint) and, for event time, -T<n>ms
_ATTRIBUTE_TEXT = re.compile(r"#(\d+)[A-Za-z]*(?:-T\d+ms)?$")
_SEPARATOR = "\u0000"


def attributes(attrs: Any) -> list[tuple[str, int]]:
    """(name, exprId) of each attribute of a Scala collection: read from one string of the JVM when
    every attribute prints as name#id, else attribute by attribute."""
    n = attrs.size()
    if n == 0:
        return []
    pieces = str(attrs.mkString(_SEPARATOR)).split(_SEPARATOR)
    found = [(p, _ATTRIBUTE_TEXT.search(p)) for p in pieces]
    if len(pieces) == n and all(m is not None for _p, m in found):
        return [(p[: m.start()], int(m.group(1))) for p, m in found]  # type: ignore[union-attr]
    return [(str(a.name()), int(a.exprId().id())) for a in to_list(attrs)]


def expr_id(attr: Any) -> int:
    m = _ATTRIBUTE_TEXT.search(str(attr.toString()))
    return int(m.group(1)) if m is not None else int(attr.exprId().id())


def fields_of(node: Any) -> list[dict[str, Any]]:
    """The node's output as StructType JSON fields (name, type, nullable, metadata): one call for all."""
    return json.loads(node.schema().json())["fields"]


def field_kind(field: dict[str, Any]) -> str | None:
    """``type_key`` of a ``fields_of`` field."""
    return field["type"] if isinstance(field["type"], str) else None


def type_key(data_type: Any) -> str | None:
    """``long``, ``string``, ``decimal(10,2)``...; None for nested types. Strings with a collation other
    than the default are ``string collate X``, which no translation accepts (their = and < differ)."""
    value = json.loads(data_type.json())
    return value if isinstance(value, str) else None


def carbon_relation(node: Any, kind: str | None = None) -> Any | None:
    """The ``DataSourceV2Relation`` of a carbondata relation or scan node, else None (``kind``: the
    node's name when the caller has it, saving a JVM call)."""
    kind = kind if kind is not None else node_name(node)
    if kind == "DataSourceV2ScanRelation":
        rel = node.relation()
    elif kind == "DataSourceV2Relation":
        rel = node
    else:
        return None
    table = rel.table()
    if class_name(table) not in PYTHON_TABLES or str(table.name()).lower() != SOURCE:
        return None
    return rel


# Spark's Python table and the extension's kinds of it (jvm/src): SizedPythonTable reports its scans' size,
# DescribedPythonTable is a catalog table reporting what the catalog records
PYTHON_TABLES = ("PythonTable", "SizedPythonTable", "DescribedPythonTable")


def relation_options(jvm: Any, rel: Any) -> dict[str, str]:
    """The relation's options, keys lower-cased (Spark's map is case-insensitive)."""
    m = rel.options().asCaseSensitiveMap()
    keys = str(jvm_class(jvm, "java.lang.String").join(_SEPARATOR, m.keySet()))  # one call, not one per entry and step
    return {k.lower(): str(m.get(k)) for k in keys.split(_SEPARATOR) if k}


def single_path(options: dict[str, str]) -> str | None:
    """The one table path of a relation (``load(path)`` or ``load([path])``), else None."""
    if options.get("path"):
        return options["path"]
    try:
        paths = json.loads(options.get("paths") or "null")
    except ValueError:
        return None
    return paths[0] if isinstance(paths, list) and len(paths) == 1 and isinstance(paths[0], str) else None


# ---------------------------------------------------------------------------------- filter translation


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _string(value: Any) -> str:
    return str(value.toString()) if hasattr(value, "toString") else str(value)


def _number(value: Any, kind: str) -> int | float | Decimal | None:
    """A numeric literal's value in Python (py4j hands Catalyst decimals over as JVM objects)."""
    if kind in INTEGRAL:
        return int(value)
    if kind in ("double", "float"):
        return float(value)
    if kind.startswith("decimal"):
        if isinstance(value, Decimal | int):  # from set_values
            return Decimal(value)
        big = value.toJavaBigDecimal()
        return big if isinstance(big, Decimal) else Decimal(str(big.toPlainString()))
    return None


def render(value: Any, lit_kind: str, col_kind: str) -> str | None:
    """Filter text for a Catalyst literal compared with a column stored as ``col_kind``, or None.

    The literal is spelled in the column's own domain (an integer for an integral column, a decimal that
    fits the column's scale...), so the carbondata binder has no coercion left to decide: what it compares
    is exactly what Spark compares. Anything else (2.5 against an int column, a literal of another type,
    sub-millisecond timestamps, which CarbonData cannot hold) is left to Spark.
    """
    if value is None:
        return None
    numeric = lit_kind in INTEGRAL or lit_kind in ("double", "float") or lit_kind.startswith("decimal")
    if col_kind in INTEGRAL:
        if not numeric:
            return None
        v = _number(value, lit_kind)
        if isinstance(v, float):
            if not math.isfinite(v) or v != int(v):
                return None
            v = int(v)
        elif isinstance(v, Decimal):
            if v != v.to_integral_value():
                return None
            v = int(v)
        lo, hi = INTEGRAL[col_kind]
        return str(v) if v is not None and lo <= v <= hi else None
    if col_kind == "double":
        if not numeric or lit_kind.startswith("decimal"):
            return None
        v = float(_number(value, lit_kind))
        return repr(v) + "D" if math.isfinite(v) else None  # the D suffix reads it back as a double
    if col_kind.startswith("decimal"):
        if not numeric or lit_kind in ("double", "float"):
            return None
        v = Decimal(_number(value, lit_kind))
        scale = int(col_kind[col_kind.index(",") + 1 : -1])
        exponent = v.as_tuple().exponent
        if not isinstance(exponent, int) or -exponent > scale:
            return None
        return format(v, "f")
    if col_kind != lit_kind:
        return None
    if col_kind == "string":
        return "'" + _string(value).replace("'", "''") + "'"
    if col_kind == "boolean":
        return "TRUE" if value else "FALSE"
    if col_kind == "date":
        try:
            return f"DATE '{(_EPOCH_DAY + dt.timedelta(days=int(value))).isoformat()}'"
        except OverflowError:
            return None
    if col_kind == "timestamp":
        micros = int(value)
        if micros % 1000:
            return None
        try:
            t = _EPOCH + dt.timedelta(microseconds=micros)
        except OverflowError:
            return None
        return f"TIMESTAMP '{t.strftime('%Y-%m-%d %H:%M:%S.%f')}+00:00'"
    return None


_FROM_TEXT = {"boolean": lambda t: t == "true", "string": str, "double": float, "float": float,
              "date": int, "timestamp": int, **{k: int for k in INTEGRAL}}


def set_values(hset: Any, kind: str) -> list[Any] | None:
    """The values of an ``InSet``'s Scala set as Python values in ``render``'s terms (days for a date,
    microseconds for a timestamp), read as one string: three JVM calls whatever the set's size, where a
    call per value made a 100,000-value IN take minutes. None for types without a text form here, or a
    string holding the separator (the piece count gives it away)."""
    convert = _FROM_TEXT.get(kind) or (Decimal if kind.startswith("decimal") else None)
    if convert is None:
        return None
    n = int(hset.size())
    if n == 0:
        return []
    pieces = str(hset.mkString(_SEPARATOR)).split(_SEPARATOR)
    if hset.contains(None):  # NULL prints as "null"; a string 'null' would be a second such piece
        pieces.remove("null")
        out: list[Any] = [None]
    else:
        out = []
    if len(pieces) + len(out) != n:
        return None
    try:
        return out + [convert(p) for p in pieces]
    except (ValueError, ArithmeticError):
        return None


def _bound(value: Any, lit_kind: str, col_kind: str, lower: bool) -> str | None:
    """Filter text for a lower (or upper) bound at ``value``, rounded outwards into the column's domain
    (a bound may be looser than the value, never tighter); None when there is none to give."""
    text = render(value, lit_kind, col_kind)
    if text is not None or lit_kind in ("double", "float"):
        return text
    if col_kind == "timestamp" and lit_kind == "timestamp":  # CarbonData keeps milliseconds
        ms = int(value) // 1000 if lower else -(-int(value) // 1000)
        return render(ms * 1000, lit_kind, col_kind)
    number = _number(value, lit_kind)
    if number is None:
        return None
    if col_kind in INTEGRAL:
        return render(math.floor(number) if lower else math.ceil(number), "long", col_kind)
    if col_kind.startswith("decimal"):
        step = Decimal(1).scaleb(-int(col_kind[col_kind.index(",") + 1 : -1]))
        rounded = Decimal(number).quantize(step, rounding=ROUND_FLOOR if lower else ROUND_CEILING)
        return render(rounded, "decimal(38,0)", col_kind)
    return None


@dataclass(frozen=True)
class Column:
    name: str  # as the relation spells it
    kind: str  # type_key of the relation's attribute


class FilterTranslator:
    """Catalyst predicates over one relation occurrence -> carbondata filter text.

    ``implied(e)`` gives text that is TRUE on every row where ``e`` is TRUE (it may be weaker: an AND
    keeps its translatable side); that is all a relation's filter may do, since Spark still evaluates
    ``e`` itself. ``exact(e)`` gives text that agrees with ``e`` on every row where ``e`` is not NULL,
    which is what a NOT needs of its operand.

    Floating columns: Spark orders NaN above every number, CarbonData's comparisons and min/max do not,
    so on a double only =, <, <= and IN are translated, never under a NOT; float columns only IS NULL.
    """

    def __init__(self, columns: dict[int, Column]):
        self.columns = columns  # exprId -> column
        self.long_in = False  # saw an IN longer than MAX_IN_VALUES

    def column(self, e: Any, allow_cast: bool = True) -> Column | None:
        """The relation column ``e`` stands for, through casts that keep every value and its order."""
        kind = node_name(e)
        if kind == "AttributeReference":
            return self.columns.get(expr_id(e))
        if kind != "Cast" or not allow_cast:
            return None
        inner = self.column(e.child(), allow_cast=False)
        to = type_key(e.dataType())
        if inner is None or to is None or inner.kind not in INTEGRAL:
            return None
        if to in INTEGRAL and INTEGRAL[to][1] >= INTEGRAL[inner.kind][1]:
            return inner
        if to == "double" and inner.kind != "long":  # long -> double rounds above 2**53
            return inner
        if to.startswith("decimal"):
            precision, scale = (int(x) for x in to[len("decimal(") : -1].split(","))
            return inner if precision - scale >= _DIGITS[inner.kind] else None
        return None

    @staticmethod
    def literal(e: Any) -> tuple[Any, str] | None:
        if node_name(e) != "Literal":
            return None
        kind = type_key(e.dataType())
        return None if kind is None else (e.value(), kind)

    def compare(self, col: Column, op: str, value: Any, lit_kind: str, negated: bool) -> str | None:
        if col.kind == "float" or col.kind == "double" and (negated or op not in ("=", "<", "<=")):
            return None
        text = render(value, lit_kind, col.kind)
        return None if text is None else f"({quote(col.name)} {op} {text})"

    def comparison(self, e: Any) -> tuple[Column, str, Any, str] | None:
        """(column, operator with the column on the left, literal value, literal type) of a comparison."""
        op = _COMPARE.get(node_name(e), "=")
        for left, right, this_op in ((e.left(), e.right(), op), (e.right(), e.left(), _MIRROR[op])):
            col, lit = self.column(left), self.literal(right)
            if col is not None and lit is not None:
                return col, this_op, lit[0], lit[1]
        return None

    def in_list(self, e: Any) -> tuple[Column, list[tuple[Any, str]]] | None:
        """(column, [(value, type)]) of an IN over a column, from ``In`` or its set form ``InSet`` (the
        optimizer's form of a literal list longer than 10). A set's values come in one JVM call."""
        kind = node_name(e)
        size = int((e.hset() if kind == "InSet" else e.list()).size()) if kind in ("In", "InSet") else 0
        self.long_in |= size > MAX_IN_VALUES
        if kind == "InSet":
            col = self.column(e.child())
            lit_kind = type_key(e.child().dataType())
            if col is None or lit_kind is None:
                return None
            values = set_values(e.hset(), lit_kind)
            return None if values is None else (col, [(v, lit_kind) for v in values])
        if kind != "In" or size > MAX_IN_VALUES:
            return None  # a long list of non-literals: not worth a py4j call per item
        col = self.column(e.value())
        items = [self.literal(x) for x in to_list(e.list())]
        if col is None or any(x is None for x in items):
            return None
        return col, items  # type: ignore[return-value]

    def render_in(self, col: Column, items: list[tuple[Any, str]], negated: bool) -> str | None:
        if not items or len(items) > MAX_IN_VALUES or col.kind == "float":
            return None
        if col.kind == "double":
            # besides NaN: an IN list is matched by hashing, where 0.0 and -0.0 differ; Spark's do not
            if negated or any(float(_number(v, k) or 0.0) == 0.0 for v, k in items):
                return None
        texts = [render(v, k, col.kind) for v, k in items]
        if any(t is None for t in texts):
            return None
        return f"({quote(col.name)} IN ({', '.join(dict.fromkeys(texts))}))"  # type: ignore[arg-type]

    def in_range(self, col: Column, items: list[tuple[Any, str]]) -> str | None:
        """``min <= c AND c <= max`` of a long IN list: TRUE wherever the IN is, so it prunes blocklets by
        min/max without spelling the list into the filter text; Spark matches the values exactly."""
        if not items or col.kind in ("float", "double", "boolean"):
            return None  # NaN and -0.0 order differently in CarbonData; a boolean set is never long
        values = [v for v, _k in items]
        lit_kind = items[0][1]
        try:
            low, high = min(values), max(values)
        except TypeError:
            return None
        parts = [f"({quote(col.name)} {op} {t})" for op, t in
                 ((">=", _bound(low, lit_kind, col.kind, True)), ("<=", _bound(high, lit_kind, col.kind, False)))
                 if t is not None]
        return None if not parts else parts[0] if len(parts) == 1 else f"({parts[0]} AND {parts[1]})"

    def exact(self, e: Any, negated: bool = False) -> str | None:
        kind = node_name(e)
        if kind in ("And", "Or"):
            left, right = self.exact(e.left(), negated), self.exact(e.right(), negated)
            return None if left is None or right is None else f"({left} {kind.upper()} {right})"
        if kind == "Not":
            inner = self.exact(e.child(), not negated)
            return None if inner is None else f"(NOT {inner})"
        if kind in ("IsNull", "IsNotNull"):
            col = self.column(e.child(), allow_cast=False)
            return None if col is None else f"({quote(col.name)} IS {'NOT ' if kind == 'IsNotNull' else ''}NULL)"
        if kind == "AttributeReference":  # a boolean column used as a predicate
            col = self.column(e)
            return f"({quote(col.name)} = TRUE)" if col is not None and col.kind == "boolean" else None
        if kind in _COMPARE:
            got = self.comparison(e)
            return None if got is None else self.compare(*got, negated)
        if kind in ("In", "InSet"):
            got = self.in_list(e)
            # a NULL in the list makes IN never FALSE, which no filter text can say
            if got is None or any(v is None for v, _k in got[1]):
                return None
            return self.render_in(got[0], got[1], negated)
        if kind in ("StartsWith", "Like"):
            return self.prefix(e)
        return None

    def prefix(self, e: Any) -> str | None:
        """``StartsWith(c, 'ab')`` or ``c LIKE 'ab%'`` -> ``c LIKE 'ab%'`` (no wildcard inside the prefix)."""
        col, lit = self.column(e.left(), allow_cast=False), self.literal(e.right())
        if col is None or lit is None or col.kind != "string" or lit[1] != "string" or lit[0] is None:
            return None
        text = _string(lit[0])
        if node_name(e) == "Like":
            if str(e.escapeChar()) != "\\" or not text.endswith("%"):
                return None
            text = text[:-1]
        if not text or any(ch in text for ch in "%_\\"):
            return None
        return f"({quote(col.name)} LIKE " + "'" + (text + "%").replace("'", "''") + "')"

    def implied(self, e: Any) -> str | None:
        kind = node_name(e)
        if kind == "And":
            parts = [p for p in (self.implied(e.left()), self.implied(e.right())) if p is not None]
            return None if not parts else parts[0] if len(parts) == 1 else f"({parts[0]} AND {parts[1]})"
        if kind == "Or":
            left, right = self.implied(e.left()), self.implied(e.right())
            return None if left is None or right is None else f"({left} OR {right})"
        if kind == "EqualNullSafe":  # a <=> v is TRUE where a = v (v not NULL), or where a IS NULL (v NULL)
            got = self.comparison(e)
            if got is None:
                return None
            col, _op, value, lit_kind = got
            return f"({quote(col.name)} IS NULL)" if value is None else self.compare(col, "=", value, lit_kind, False)
        if kind in ("In", "InSet"):  # a IN (1, NULL) is TRUE only where a = 1
            got = self.in_list(e)
            if got is None:
                return None
            items = [x for x in got[1] if x[0] is not None]
            if len(items) > MAX_IN_VALUES:
                return self.in_range(got[0], items)
            return self.render_in(got[0], items, False)
        return self.exact(e)


def conjuncts(e: Any) -> list[Any]:
    if node_name(e) == "And":
        return conjuncts(e.left()) + conjuncts(e.right())
    return [e]
