"""The messages between the Spark extension and the Python data source are declared once per language:
carbon_ds/spark/bridge/protocol.py's dataclasses and jvm/src's Bridge.java records name the same messages, with
the same JSON keys in the same order, types that match, and the same keys left out while null (or false). The
golden texts pin the bytes: json.dumps's separators from Python, Jackson's compact ones from the JVM, and the
version ``v`` on every top-level message.
tests/spark/test_bridge_protocol_jar.py sends every sample through the jar itself."""

from __future__ import annotations

import dataclasses
import json
import re
import types
from pathlib import Path
from typing import Any, Union, get_args, get_origin, get_type_hints

import pytest

from carbon_ds.errors import CarbonOptionError
from carbon_ds.spark.bridge import protocol
from carbon_ds.spark.bridge.protocol import (
    Condition,
    CountKey,
    Day,
    FileGroup,
    JoinKey,
    NativePlan,
    NativePlanAnswer,
    NativePlanRequest,
    PartialCountsSpec,
    PlanReadsAnswer,
    PlanReadsRequest,
    ReadAnswer,
    ReadRequest,
    ReadSettings,
    ValueCount,
    View,
    ViewAggregate,
    ViewGroup,
    ViewsAnswer,
    ViewsRequest,
    from_json,
    to_json,
)

ROOT = Path(__file__).resolve().parents[2]
BRIDGE_JAVA = ROOT / "jvm" / "src" / "main" / "java" / "carbonds" / "spark" / "Bridge.java"

_COMPONENT = re.compile(r"((?:@\w+(?:\([^)]*\))?\s+)*)(.+?)\s+(\w+)", re.S)


@dataclasses.dataclass(frozen=True)
class Record:
    shape: str  # "object", "array" (@JsonFormat ARRAY) or "bare" (@JsonValue)
    components: tuple[tuple[str, str, str], ...]  # (name, type without spaces, @JsonInclude value or "")


def _split(text: str) -> list[str]:
    """``text`` split at the commas outside <> and ()."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "<(" and 1 or ch in ">)" and -1 or 0
        if ch == "," and depth == 0:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return [p.strip() for p in out if p.strip()]


def java_records(text: str) -> tuple[int, dict[str, Record]]:
    """VERSION and every record of a Bridge.java text."""
    text = re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.S)
    version = re.search(r"static\s+final\s+int\s+VERSION\s*=\s*(\d+)\s*;", text)
    assert version, "Bridge.java: no `static final int VERSION = n;`"
    records = {}
    for m in re.finditer(r"\brecord\s+(\w+)\s*\(", text):
        depth, end = 1, m.end()
        while depth:
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            end += 1
        before = text[max(text.rfind("}", 0, m.start()), text.rfind(";", 0, m.start())):m.start()]
        components, bare = [], False
        for part in _split(text[m.end():end - 1]):
            c = _COMPONENT.fullmatch(part)
            assert c, f"Bridge.java record {m[1]}: cannot read component {part!r}"
            include = re.search(r"@JsonInclude\((\w+)\)", c[1])
            bare = bare or "@JsonValue" in c[1]
            components.append((c[3], re.sub(r"\s+", "", c[2]), include[1] if include else ""))
        shape = "bare" if bare else "array" if "Shape.ARRAY" in before else "object"
        records[m[1]] = Record(shape, tuple(components))
    return int(version[1]), records


def _union(hint: Any) -> tuple[Any, ...] | None:
    return get_args(hint) if isinstance(hint, types.UnionType) or get_origin(hint) is Union else None


def java_types(hint: Any, boxed: bool = False) -> set[str]:
    """The Java spellings of a protocol field's type (``boxed``: inside a List or Map, or nullable)."""
    args = _union(hint)
    if args is not None:
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            return java_types(rest[0], boxed=True)
        assert set(rest) == {int, str}, f"no Java type for {hint}"
        return {"Object"}
    if hint is int:
        return {"Integer", "Long"} | (set() if boxed else {"int", "long"})
    if hint is bool:
        return {"Boolean"} | (set() if boxed else {"boolean"})
    if hint is str:
        return {"String"}
    if dataclasses.is_dataclass(hint):
        return {hint.__name__}
    origin, inner = get_origin(hint), get_args(hint)
    if origin is tuple and inner[-1] is Ellipsis:
        return {f"List<{t}>" for t in java_types(inner[0], boxed=True)}
    if origin is not None and origin.__name__ == "Mapping":
        if inner[1] is Any:
            return {"JsonNode"}  # SparkSchema
        return {f"Map<String,{t}>" for t in java_types(inner[1], boxed=True)}
    raise AssertionError(f"no Java type for {hint}")


def python_record(cls: type) -> tuple[str, list[tuple[str, Any, str]]]:
    hints = get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        include = "NON_NULL" if f.default is None else "NON_DEFAULT" if f.default is False else ""
        out.append((f.metadata.get("wire", f.name), hints[f.name], include))
    return getattr(cls, "SHAPE", "object"), out


def differences(version: int, records: dict[str, Record]) -> list[str]:
    """Every way Bridge.java's records differ from protocol.MESSAGES (empty: they agree)."""
    out = [f"VERSION: Java {version}, Python {protocol.VERSION}"] if version != protocol.VERSION else []
    out += [f"{n}: only in Java" for n in records.keys() - protocol.MESSAGES.keys()]
    out += [f"{n}: only in Python" for n in protocol.MESSAGES.keys() - records.keys()]
    for name in sorted(records.keys() & protocol.MESSAGES.keys()):
        java = records[name]
        shape, fields = python_record(protocol.MESSAGES[name])
        if shape != java.shape:
            out.append(f"{name}: shape Java {java.shape}, Python {shape}")
        java_names, python_names = [c[0] for c in java.components], [f[0] for f in fields]
        if java_names != python_names:
            out.append(f"{name}: components Java {java_names}, Python {python_names}")
            continue
        for (key, jtype, jinclude), (_, hint, pinclude) in zip(java.components, fields, strict=True):
            if jtype not in java_types(hint):
                out.append(f"{name}.{key}: Java {jtype}, Python {hint} (expected one of {sorted(java_types(hint))})")
            if jinclude != pinclude:
                out.append(f"{name}.{key}: left out while default in Java {jinclude or 'never'}, "
                           f"in Python {pinclude or 'never'}")
    return out


def test_java_and_python_declare_the_same_messages():
    version, records = java_records(BRIDGE_JAVA.read_text(encoding="utf-8"))
    assert len(records) >= 20  # the parse found the records at all
    assert differences(version, records) == []


@pytest.mark.parametrize("old, new, reported", [
    ("String op, ", "String op, String extra, ", "Condition: components"),          # added on one side
    ("long localBytes, int v", "long local_bytes, int v", "ViewsRequest: components"),  # renamed
    ("String segment,", "Long segment,", "View.segment: Java Long"),                # retyped
    ("@JsonInclude(NON_NULL) String sum", "String sum", "ViewAggregate.sum: left out"),  # null now written
    ("public record JoinKey", "public record JoinKey2", "JoinKey: only in Python"),
    ("List<View> views, int v)", "List<View> views)", "ViewsAnswer: components"),  # unversioned
    ("public record View(", "@JsonFormat(shape = JsonFormat.Shape.ARRAY)\n    public record View(", "View: shape"),
    ("VERSION = 1;", "VERSION = 2;", "VERSION"),
])
def test_the_comparison_sees_a_change(old, new, reported):
    text = BRIDGE_JAVA.read_text(encoding="utf-8")
    assert old in text
    found = differences(*java_records(text.replace(old, new, 1)))
    assert any(d.startswith(reported) for d in found), found


@pytest.mark.parametrize("kind, index", [(k, i) for k, xs in protocol.SAMPLES.items() for i in range(len(xs))])
def test_every_sample_reads_back_as_itself(kind, index):
    sample = protocol.SAMPLES[kind][index]
    assert from_json(protocol.MESSAGES[kind], to_json(sample), strict=True) == sample


def test_the_samples_set_every_optional_field():
    seen: set[tuple[str, str]] = set()

    def walk(value: Any) -> None:
        if dataclasses.is_dataclass(value):
            for f in dataclasses.fields(value):
                v = getattr(value, f.name)
                if f.default is not dataclasses.MISSING and v != f.default:
                    seen.add((type(value).__name__, f.name))
                walk(v)
        elif isinstance(value, tuple | list):
            for v in value:
                walk(v)
    for xs in protocol.SAMPLES.values():
        walk(xs)
    # v: always written, whatever its value (test_a_text_without_a_version_reads_as_version_1 and after)
    wanted = {(c.__name__, f.name) for c in protocol.MESSAGES.values() for f in dataclasses.fields(c)
              if f.default is not dataclasses.MISSING and f.name != "v"}
    assert wanted - seen == set()


_SCHEMA = {"type": "struct", "fields": [{"name": "x", "type": "long", "nullable": True, "metadata": {}}]}
_SCHEMA_TEXT = '{"type": "struct", "fields": [{"name": "x", "type": "long", "nullable": true, "metadata": {}}]}'


# the answers' texts (json.dumps's separators; the keys the dict code wrote, in its order, then "v")
@pytest.mark.parametrize("message, text", [
    (PlanReadsAnswer(answers=(
        ReadAnswer(read="QQ==", arrow="Qg==", bytes=5, keep=True, plan="2@9"), None, ReadAnswer(rows=0),
        ReadAnswer(values=(ValueCount("a", 3), ValueCount("b", 1)), keep=True), ReadAnswer(bytes=7),
        ReadAnswer(read="QQ=="))),
     '{"answers": [{"read": "QQ==", "arrow": "Qg==", "bytes": 5, "keep": true, "plan": "2@9"}, null, {"rows": 0}, '
     '{"values": [["a", 3], ["b", 1]], "keep": true}, {"bytes": 7}, {"read": "QQ=="}], "v": 1}'),
    (PlanReadsAnswer(answers=()), '{"answers": [], "v": 1}'),
    (NativePlanAnswer(plan=NativePlan(carbon_segments=("0", "3"), groups=(
        FileGroup(key="k1", format="parquet", options={"a": "1"}, paths=("file:/p",), sizes=(3,),
                  select=("`x` AS `x`",)),
        FileGroup(key="k2", format="orc", options={}, paths=("file:/q", "file:/r"), sizes=(1, 2))))),
     '{"plan": {"carbon_segments": ["0", "3"], "groups": [{"key": "k1", "format": "parquet", "options": {"a": "1"}, '
     '"paths": ["file:/p"], "sizes": [3], "select": ["`x` AS `x`"]}, {"key": "k2", "format": "orc", '
     '"options": {}, "paths": ["file:/q", "file:/r"], "sizes": [1, 2]}]}, "v": 1}'),
    (NativePlanAnswer(plan=None), '{"plan": null, "v": 1}'),
    (ViewsAnswer(views=(
        View(arrow="QQ==", path="/m", name="db.v", segment="2", where=None, zone="UTC", schema=_SCHEMA,
             tables=(0, None), keys=(JoinKey("0:k", "1:k"),),
             groups=(ViewGroup(name="g", column="0:g", granularity=None),),
             aggregates=(ViewAggregate(name="n", func="count", column=None),
                         ViewAggregate(name="a", func="avg", column="0:x", sum="a_sum", count="a_count"))),
        View(path="/w", name="w", segment="0", zone="UTC", schema=_SCHEMA, tables=(0,), keys=(),
             where=(Condition(column="x", op="in", values=(1, 2)), Condition(column="s", op="is null", values=())),
             groups=(ViewGroup(name="d", column="0:t", granularity="day"),), aggregates=()))),
     '{"views": [{"arrow": "QQ==", "path": "/m", "name": "db.v", "segment": "2", "where": null, "zone": "UTC", '
     f'"schema": {_SCHEMA_TEXT}, "tables": [0, null], "keys": [["0:k", "1:k"]], '
     '"groups": [{"name": "g", "column": "0:g", "granularity": null}], '
     '"aggregates": [{"name": "n", "func": "count", "column": null}, '
     '{"name": "a", "func": "avg", "column": "0:x", "sum": "a_sum", "count": "a_count"}]}, '
     '{"path": "/w", "name": "w", "segment": "0", "where": [{"column": "x", "op": "in", "values": [1, 2]}, '
     '{"column": "s", "op": "is null", "values": []}], "zone": "UTC", '
     f'"schema": {_SCHEMA_TEXT}, "tables": [0], "keys": [], '
     '"groups": [{"name": "d", "column": "0:t", "granularity": "day"}], "aggregates": []}], "v": 1}'),
])
def test_answers_write_the_texts_the_jvm_reads(message, text):
    assert to_json(message) == text
    assert from_json(type(message), text, strict=True) == message


# the texts the JVM writes (Jackson: no spaces), read as the messages they are
@pytest.mark.parametrize("cls, text, message", [
    (PlanReadsRequest,
     '{"settings":{"maxArrowBatchSize":10000,"filterPushdown":false,"binaryAsBytes":true,"localBytes":4194304},'
     f'"reads":[{{"options":{{"a":"1","path":"/t"}},"schema":{_SCHEMA_TEXT}}}],"v":1}}',
     PlanReadsRequest(settings=ReadSettings(max_arrow_batch_size=10000, filter_pushdown=False, binary_as_bytes=True,
                                            local_bytes=4194304),
                      reads=(ReadRequest(options={"a": "1", "path": "/t"}, schema=_SCHEMA),))),
    (PlanReadsRequest,
     '{"settings":{"maxArrowBatchSize":1,"filterPushdown":true,"binaryAsBytes":false,"localBytes":0,'
     '"bytesOnly":true},"reads":[],"v":1}',
     PlanReadsRequest(settings=ReadSettings(max_arrow_batch_size=1, filter_pushdown=True, binary_as_bytes=False,
                                            local_bytes=0, bytes_only=True), reads=())),
    (NativePlanRequest, f'{{"declared":{_SCHEMA_TEXT},"known":{{"k":{_SCHEMA_TEXT}}},"v":1}}',
     NativePlanRequest(declared=_SCHEMA, known={"k": _SCHEMA})),
    (ViewsRequest, '{"tables":["/a",null],"localBytes":5,"v":1}', ViewsRequest(tables=("/a", None), local_bytes=5)),
    (PartialCountsSpec, '{"keys":[{"column":"s"},{"column":"t","day":{"offsets":[0,3600],"at":[10],'
                        '"until":20,"zone":"Europe/Paris"}}],"v":1}',
     PartialCountsSpec(keys=(CountKey(column="s"), CountKey(column="t", day=Day(offsets=(0, 3600), at=(10,),
                                                                                   until=20, zone="Europe/Paris"))))),
])
def test_requests_read_the_texts_the_jvm_writes(cls, text, message):
    assert from_json(cls, text, strict=True) == message
    assert json.loads(to_json(message)) == json.loads(text)


@pytest.mark.parametrize("cls, text, message", [
    (ViewsRequest, '{"tables": [], "local_bytes": 0}', r"ViewsRequest\.localBytes: expected an integer, found nothing"),
    (ViewsRequest, '{"tables": [], "localBytes": "0"}', r"ViewsRequest\.localBytes: expected an integer, found the string '0'"),
    (ViewsRequest, '{"tables": [], "localBytes": true}', r"localBytes: expected an integer, found true"),
    (PlanReadsAnswer, '{"answers": [{"rows": 1.5}]}',
     r"PlanReadsAnswer\.answers\[0\]\.rows: expected an integer or null, found the number 1.5"),
    (PlanReadsAnswer, '[{"rows": 1}]', r"PlanReadsAnswer: expected an object PlanReadsAnswer, found a list of 1"),
    (PlanReadsAnswer, '{"answers": [{"values": [["a"]]}]}',
     r"PlanReadsAnswer\.answers\[0\]\.values\[0\]: expected \[value, rows\]"),
    (ViewsAnswer, '{"views": [{"path": 5}]}', r"ViewsAnswer\.views\[0\]\.path: expected a string, found the number 5"),
    (ViewsRequest, '{"tables": [], "localBytes": 0, "v": "1"}', r"ViewsRequest\.v: expected an integer"),
    (PartialCountsSpec, "not json", r"PartialCountsSpec: expected JSON text, found 'not json'"),
])
def test_a_bad_text_names_message_field_expected_and_found(cls, text, message):
    with pytest.raises(CarbonOptionError, match=message):
        from_json(cls, text)


def test_strict_refuses_an_unknown_key_production_ignores_it():
    text = '{"tables": [], "localBytes": 0, "v": 1, "more": 2}'
    assert from_json(ViewsRequest, text) == ViewsRequest(tables=(), local_bytes=0)
    with pytest.raises(CarbonOptionError, match=r"ViewsRequest: expected only the keys \['tables', 'localBytes', 'v'\]"):
        from_json(ViewsRequest, text, strict=True)


def test_a_text_without_a_version_reads_as_version_1():
    # a partial_counts option kept in a plan built before the field; requests of an older jar
    old = from_json(PartialCountsSpec, '{"keys":[{"column":"s"}]}', strict=True)
    assert old == PartialCountsSpec(keys=(CountKey(column="s"),)) and old.v == 1
    assert protocol.read_request(ViewsRequest, '{"tables":[],"localBytes":0}') == ViewsRequest(tables=(), local_bytes=0)


def test_a_request_of_another_version_reads_as_none():
    assert protocol.read_request(ViewsRequest, '{"tables":[],"localBytes":0,"v":1}') == ViewsRequest(
        tables=(), local_bytes=0)
    # read before the rest: another version's shape may not be this one's
    assert protocol.read_request(ViewsRequest, '{"views":{"x":1},"v":2}') is None
    assert protocol.read_request(ViewsRequest, '{"tables":[],"localBytes":0,"v":0}') is None
    with pytest.raises(CarbonOptionError, match="localBytes"):
        protocol.read_request(ViewsRequest, '{"tables":[],"v":1}')
