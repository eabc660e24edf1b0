"""The messages between the Spark extension (jvm/src) and the Python data source, typed once per language.

The carriers are Spark's (docs/design.md): a planner question travels as JSON text in a string option of a
schema call, its answer as JSON text in the metadata of the one field that call returns, an instruction to a
relation's tasks as an option. Only the payload is typed here; jvm/src's ``Bridge.java`` declares the same
records (same names, same wire names in the same order, matching types), which
tests/package/test_bridge_protocol.py checks from the source and tests/spark/test_bridge_protocol_jar.py through
the jar, so a key renamed on one side fails there instead of being read as absent.

One codec for every message: ``to_json`` writes the fields in declaration order, with ``json.dumps``'s
default separators (the texts the dict code wrote before); ``from_json`` checks every value's type and
raises CarbonOptionError naming the message, the field, what was expected and what was found. A field
declared with default None or False is left out while it has that value (its reader takes a missing key as
that value); a field ``X | None`` without default is written as null (the JVM reads it as present).

Shapes: a message is a JSON object, except ``SHAPE = "array"`` (its fields as a fixed-length list).

Versions: every top-level request and answer carries ``v`` (VERSION when written here). A text without it
is from before the field and reads as version 1 (a ``partial_counts`` option kept in a plan); ``read_request``
gives None for a request of a version this package does not know, which the data source answers with
nothing (Spark then plans as without the extension), as the JVM ignores an answer of another version.

Stdlib only: the data source's worker decodes these on a standalone Spark Connect server too, and
tests/package imports the module without Spark.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Union, get_args, get_origin, get_type_hints

from carbon_ds.errors import CarbonOptionError

__all__ = [
    "MESSAGES", "SAMPLES", "VERSION", "Condition", "CountKey", "Day", "FileGroup", "JoinKey", "NativePlan",
    "NativePlanAnswer", "NativePlanRequest", "PartialCountsSpec", "PlanReadsAnswer", "PlanReadsRequest",
    "ReadAnswer", "ReadRequest", "ReadSettings", "SparkSchema", "ValueCount", "View", "ViewAggregate",
    "ViewGroup", "ViewsAnswer", "ViewsRequest", "from_json", "read_request", "to_json",
]

VERSION = 1
UNVERSIONED = 1  # the version of a text without "v": written before the field

# A StructType's JSON object, kept as such: Python makes it a StructType with StructType.fromJson where it is
# used, Java with DataType.fromJson (JsonNode there); this module imports no pyspark
SparkSchema = Mapping[str, Any]

message = dataclass(frozen=True, slots=True, kw_only=True)
pair = dataclass(frozen=True, slots=True)


def wire(name: str, **kwargs: Any) -> Any:
    """A field whose JSON key differs from its Python name (the JVM's camelCase settings)."""
    return field(metadata={"wire": name}, **kwargs)


# ---------------------------------------------------------------- M1: plan reads (jvm/src ReadPlans)


@message
class ReadSettings:
    max_arrow_batch_size: int = wire("maxArrowBatchSize")
    filter_pushdown: bool = wire("filterPushdown")
    binary_as_bytes: bool = wire("binaryAsBytes")
    local_bytes: int = wire("localBytes")  # 0: no rows read at planning
    bytes_only: bool = wire("bytesOnly", default=False)  # only the stored bytes of each read are asked for


@message
class ReadRequest:
    options: Mapping[str, str]  # the relation's options, sorted (equal reads make equal cache keys)
    schema: SparkSchema


@message
class PlanReadsRequest:
    settings: ReadSettings
    reads: tuple[ReadRequest, ...]
    v: int = VERSION


@pair
class ValueCount:
    """A partition value (as text) and the rows holding it."""

    SHAPE: ClassVar[str] = "array"
    value: str
    rows: int


@message
class ReadAnswer:
    read: str | None = None  # base64 of Spark's read-info stream
    rows: int | None = None  # rows known at planning
    values: tuple[ValueCount, ...] | None = None  # a partition column's values
    arrow: str | None = None  # base64 Arrow IPC: a small read's rows, read at planning
    bytes: int | None = None  # stored bytes the read plans over
    keep: bool = False  # right while the table's tablestatus and schema bytes are
    plan: str | None = None  # "version@ms", named by the tasks of a query reusing the answer


@message
class PlanReadsAnswer:
    answers: tuple[ReadAnswer | None, ...]  # one per read asked; None: Spark plans it
    v: int = VERSION


# ---------------------------------------------------------------- M2: native union plan (jvm/src NativeUnion)


@message
class NativePlanRequest:
    declared: SparkSchema
    known: Mapping[str, SparkSchema]  # Spark's schema of a group's files, by group key
    v: int = VERSION


@message
class FileGroup:
    key: str
    format: str
    options: Mapping[str, str]
    paths: tuple[str, ...]
    sizes: tuple[int, ...]
    select: tuple[str, ...] | None = None  # only where the group's schema was known


@message
class NativePlan:
    carbon_segments: tuple[str, ...]
    groups: tuple[FileGroup, ...]


@message
class NativePlanAnswer:
    plan: NativePlan | None
    v: int = VERSION


# ---------------------------------------------------------------- M3: fresh materialized views (jvm/src ViewRewrite)


@message
class ViewsRequest:
    tables: tuple[str | None, ...]  # the paths of the tables the query reads
    local_bytes: int = wire("localBytes")
    v: int = VERSION


@message
class Condition:
    column: str
    op: str
    values: tuple[int | str, ...]


@message
class ViewGroup:
    name: str
    column: str  # "i:column", i the view's table
    granularity: str | None


@message
class ViewAggregate:
    name: str
    func: str
    column: str | None
    sum: str | None = None  # avg: the view's columns of the sum and the count
    count: str | None = None


@pair
class JoinKey:
    SHAPE: ClassVar[str] = "array"
    left: str
    right: str


@message
class View:
    arrow: str | None = None  # first: where the dict code put it
    path: str
    name: str
    segment: str
    where: tuple[Condition, ...] | None
    zone: str
    schema: SparkSchema
    tables: tuple[int | None, ...]
    keys: tuple[JoinKey, ...]
    groups: tuple[ViewGroup, ...]
    aggregates: tuple[ViewAggregate, ...]


@message
class ViewsAnswer:
    views: tuple[View, ...]
    v: int = VERSION


# ---------------------------------------------------------------- O1: option partial_counts (jvm/src PartialCounts)


@message
class Day:
    offsets: tuple[int, ...]  # UTC offsets in seconds, offsets[i] from at[i - 1] on
    at: tuple[int, ...] = ()
    until: int | None = None  # past it the time zone database's rules for ``zone``
    zone: str | None = None


@message
class CountKey:
    column: str
    day: Day | None = None


@message
class PartialCountsSpec:
    keys: tuple[CountKey, ...]
    v: int = VERSION


# ---------------------------------------------------------------- the codec


def to_json(msg: object) -> str:
    return json.dumps(_encode(msg))


def _wire(f: dataclasses.Field) -> str:
    return f.metadata.get("wire", f.name)


def _omitted(f: dataclasses.Field, value: Any) -> bool:
    return (f.default is None or f.default is False) and value is f.default


def _encode(value: Any) -> Any:
    if dataclasses.is_dataclass(value):
        shape = getattr(value, "SHAPE", "object")
        fields = dataclasses.fields(value)
        if shape == "array":
            return [_encode(getattr(value, f.name)) for f in fields]
        return {_wire(f): _encode(getattr(value, f.name)) for f in fields
                if not _omitted(f, getattr(value, f.name))}
    if isinstance(value, tuple | list):
        return [_encode(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _encode(v) for k, v in value.items()}
    return value


def from_json(cls: type, text: str, *, strict: bool = False) -> Any:
    """The message ``cls`` from ``text``; ``strict``: a key the message does not declare is an error too (the
    tests; production takes a newer side's added keys)."""
    return _decode(_parsed(cls, text), cls, cls.__name__, strict)


def read_request(cls: type, text: str) -> Any:
    """The request ``cls`` from ``text``, or None when its version is not this package's (a newer or older
    jar's): read before the rest, which may not be this version's shape."""
    data = _parsed(cls, text)
    if isinstance(data, dict) and data.get("v", UNVERSIONED) != VERSION:
        return None
    return _decode(data, cls, cls.__name__, False)


def _parsed(cls: type, text: str) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError) as e:
        shown = text if not isinstance(text, str) or len(text) <= 200 else text[:200] + "..."
        raise CarbonOptionError(f"{cls.__name__}: expected JSON text, found {shown!r} ({e})") from None


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return get_type_hints(cls)


def _union_args(hint: Any) -> tuple[Any, ...] | None:
    return get_args(hint) if isinstance(hint, types.UnionType) or get_origin(hint) is Union else None


def _expected(hint: Any) -> str:
    args = _union_args(hint)
    if args is not None:
        return " or ".join(_expected(a) for a in args)
    origin = get_origin(hint)
    if origin is tuple:
        inner = get_args(hint)
        return f"a list, each {_expected(inner[0])}" if inner[-1] is Ellipsis else f"a list of {len(inner)}"
    if origin is not None and issubclass(origin, Mapping) or hint is Mapping:
        return "an object"
    if dataclasses.is_dataclass(hint):
        names = [_wire(f) for f in dataclasses.fields(hint)]
        shape = getattr(hint, "SHAPE", "object")
        return f"[{', '.join(names)}]" if shape == "array" else f"an object {hint.__name__}"
    return {int: "an integer", bool: "true or false", str: "a string", type(None): "null", Any: "any JSON"}[hint]


def _found(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value if len(value) <= 60 else value[:60] + '...'!r}"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    return f"an object with keys {sorted(value)[:10]}"


def _fail(where: str, hint: Any, value: Any) -> CarbonOptionError:
    return CarbonOptionError(f"{where}: expected {_expected(hint)}, found {_found(value)}")


def _decode(value: Any, hint: Any, where: str, strict: bool) -> Any:
    args = _union_args(hint)
    if args is not None:
        if value is None and type(None) in args:
            return None
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _decode(value, arg, where, strict)
            except CarbonOptionError as e:
                if len(args) - (type(None) in args) == 1 and not str(e).startswith(f"{where}: "):
                    raise  # the one type there is, wrong deeper down: its own message says where
        raise _fail(where, hint, value)
    if hint is Any:
        return value
    if dataclasses.is_dataclass(hint):
        return _decode_message(value, hint, where, strict)
    origin = get_origin(hint)
    if origin is tuple:
        inner = get_args(hint)
        if not isinstance(value, list) or inner[-1] is not Ellipsis and len(value) != len(inner):
            raise _fail(where, hint, value)
        kinds = [inner[0]] * len(value) if inner[-1] is Ellipsis else list(inner)
        return tuple(_decode(v, k, f"{where}[{i}]", strict) for i, (v, k) in enumerate(zip(value, kinds, strict=True)))
    if origin is not None and issubclass(origin, Mapping):
        if not isinstance(value, dict):
            raise _fail(where, hint, value)
        kind = get_args(hint)[1]
        return {k: _decode(v, kind, f"{where}[{k!r}]", strict) for k, v in value.items()}
    ok = isinstance(value, hint) and (hint is not int or not isinstance(value, bool))
    if not ok:
        raise _fail(where, hint, value)
    return value


def _decode_message(value: Any, cls: type, where: str, strict: bool) -> Any:
    fields = dataclasses.fields(cls)
    hints = _hints(cls)
    shape = getattr(cls, "SHAPE", "object")
    if shape == "array":
        if not isinstance(value, list) or len(value) != len(fields):
            raise _fail(where, cls, value)
        return cls(*(_decode(v, hints[f.name], f"{where}.{_wire(f)}", strict) for v, f in zip(value, fields, strict=True)))
    if not isinstance(value, dict):
        raise _fail(where, cls, value)
    if strict:
        unknown = value.keys() - {_wire(f) for f in fields}
        if unknown:
            raise CarbonOptionError(f"{where}: expected only the keys {[_wire(f) for f in fields]} of "
                                    f"{cls.__name__}, found also {sorted(unknown)}")
    out = {}
    for f in fields:
        key = _wire(f)
        if key in value:
            out[f.name] = _decode(value[key], hints[f.name], f"{where}.{key}", strict)
        elif key == "v":
            out[f.name] = UNVERSIONED
        elif f.default is dataclasses.MISSING:
            raise CarbonOptionError(f"{where}.{key}: expected {_expected(hints[f.name])}, found nothing "
                                    f"(no key {key!r})")
    return cls(**out)


# ---------------------------------------------------------------- every message, and samples for the tests


MESSAGES: dict[str, type] = {c.__name__: c for c in (
    ReadSettings, ReadRequest, PlanReadsRequest, ValueCount, ReadAnswer, PlanReadsAnswer,
    NativePlanRequest, FileGroup, NativePlan, NativePlanAnswer,
    ViewsRequest, Condition, ViewGroup, ViewAggregate, JoinKey, View, ViewsAnswer,
    Day, CountKey, PartialCountsSpec)}

_SCHEMA: SparkSchema = {"type": "struct", "fields": [
    {"name": "x", "type": "long", "nullable": True, "metadata": {}},
    {"name": "s", "type": "string", "nullable": True, "metadata": {}}]}

# per top-level message: one with every optional field set, one minimal
SAMPLES: dict[str, tuple[object, ...]] = {
    "PlanReadsRequest": (
        PlanReadsRequest(settings=ReadSettings(max_arrow_batch_size=10000, filter_pushdown=True,
                                               binary_as_bytes=False, local_bytes=4 << 20, bytes_only=True),
                         reads=(ReadRequest(options={"a": "1", "path": "/t"}, schema=_SCHEMA),)),
        PlanReadsRequest(settings=ReadSettings(max_arrow_batch_size=1, filter_pushdown=False, binary_as_bytes=True,
                                               local_bytes=0), reads=()),
    ),
    "PlanReadsAnswer": (
        PlanReadsAnswer(answers=(
            ReadAnswer(read="UkVBRA==", arrow="QVJST1c=", bytes=1234, keep=True, plan="3@1700000000000"),
            None,
            ReadAnswer(rows=7, values=(ValueCount("a", 3), ValueCount("b", 4)), keep=True),
        )),
        PlanReadsAnswer(answers=(ReadAnswer(),)),
    ),
    "NativePlanRequest": (
        NativePlanRequest(declared=_SCHEMA, known={"k1": _SCHEMA}),
        NativePlanRequest(declared=_SCHEMA, known={}),
    ),
    "NativePlanAnswer": (
        NativePlanAnswer(plan=NativePlan(carbon_segments=("0", "2"), groups=(
            FileGroup(key="k1", format="parquet", options={"mergeSchema": "false"}, paths=("file:/t/a.parquet",),
                      sizes=(10,), select=("`x` AS `x`",)),
            FileGroup(key="k2", format="csv", options={}, paths=(), sizes=())))),
        NativePlanAnswer(plan=None),
    ),
    "ViewsRequest": (
        ViewsRequest(tables=("file:/t", None), local_bytes=100),
        ViewsRequest(tables=(), local_bytes=0),
    ),
    "ViewsAnswer": (
        ViewsAnswer(views=(
            View(arrow="QVJST1c=", path="/t/_mv/v", name="db.v", segment="0",
                 where=(Condition(column="x", op="in", values=(1, 2)), Condition(column="s", op="=", values=("a",)),
                        Condition(column="s", op="is null", values=())),
                 zone="UTC", schema=_SCHEMA, tables=(0, None), keys=(JoinKey("0:x", "1:x"),),
                 groups=(ViewGroup(name="s", column="0:s", granularity=None),
                         ViewGroup(name="d", column="0:t", granularity="day")),
                 aggregates=(ViewAggregate(name="n", func="count", column=None),
                             ViewAggregate(name="m", func="avg", column="0:x", sum="m_sum", count="m_count"))),
            View(path="/t/_mv/w", name="w", segment="1", where=None, zone="Asia/Tokyo", schema=_SCHEMA, tables=(),
                 keys=(), groups=(), aggregates=()))),
        ViewsAnswer(views=()),
    ),
    "PartialCountsSpec": (
        PartialCountsSpec(keys=(CountKey(column="s"),
                                CountKey(column="t", day=Day(offsets=(3600, 7200), at=(100,), until=2000,
                                                             zone="Europe/Paris")))),
        PartialCountsSpec(keys=(CountKey(column="t", day=Day(offsets=(0,))),)),
    ),
}
