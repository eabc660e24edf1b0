"""The messages between the Spark extension and the Python data source read alike on both sides, through the
built jar: every Python sample read strictly by Java's records and written back reads as the same message
in Python; every message Java builds reads strictly in Python and writes back the same JSON. A key present
on one side only fails the strict read of the other (tests/package/test_bridge_protocol.py checks the two
declarations against each other from the source). Each side takes only the other's messages of its version."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from py4j.protocol import Py4JJavaError
from pyspark.errors import IllegalArgumentException

import carbon_ds
from carbon_ds.errors import CarbonOptionError
from carbon_ds.names import MV_REWRITE_OPTION, NATIVE_PLAN_OPTION, PLAN_READS_OPTION
from carbon_ds.spark.bridge import protocol
from carbon_ds.spark.source.datasource import CarbonDataSource

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def bridge(ext):
    return ext._jvm.carbonds.spark.Bridge


@pytest.mark.parametrize("kind, index", [(k, i) for k, xs in protocol.SAMPLES.items() for i in range(len(xs))])
def test_python_to_java_to_python(bridge, kind, index):
    sample = protocol.SAMPLES[kind][index]
    text = protocol.to_json(sample)
    back = bridge.echo(kind, text)
    assert protocol.from_json(protocol.MESSAGES[kind], back, strict=True) == sample
    assert json.loads(back) == json.loads(text)


def test_java_to_python_to_java(bridge):
    samples = json.loads(bridge.samples())
    assert set(samples) == {"PlanReadsRequest", "NativePlanRequest", "ViewsRequest", "PartialCountsSpec"}
    for kind, texts in samples.items():
        assert texts
        for text in texts:
            message = protocol.from_json(protocol.MESSAGES[kind], text, strict=True)
            assert json.loads(protocol.to_json(message)) == json.loads(text), kind


def test_java_and_python_name_the_same_messages(bridge):
    # every Java record is one Python message (the static test compares their fields)
    assert bridge.VERSION == protocol.VERSION
    for kind, cls in protocol.MESSAGES.items():
        if getattr(cls, "SHAPE", "object") == "array":
            continue  # not a top-level message: echoed inside its own
        assert bridge.echo(kind, protocol.to_json(_any(kind))) is not None


def _any(kind: str) -> object:
    for xs in protocol.SAMPLES.values():
        for x in xs:
            found = _find(x, protocol.MESSAGES[kind])
            if found is not None:
                return found
    raise AssertionError(f"no sample holds a {kind}")


def _find(value: object, cls: type) -> object | None:
    if isinstance(value, cls):
        return value
    children = (value if isinstance(value, tuple) else value.values() if isinstance(value, dict)
                else [getattr(value, f) for f in value.__dataclass_fields__] if hasattr(value, "__dataclass_fields__")
                else [])
    for child in children:
        found = _find(child, cls)
        if found is not None:
            return found
    return None


@pytest.mark.parametrize("kind, text", [
    ("ViewsRequest", '{"tables": [], "localBytes": 0, "v": 1, "extra": 1}'),  # a key Java does not declare
    ("ViewsRequest", '{"tables": [], "local_bytes": 0, "v": 1}'),              # a renamed key
    ("ViewsRequest", '{"tables": [], "v": 1}'),                                # a missing component
    ("ViewsRequest", '{"tables": [], "localBytes": "0", "v": 1}'),             # another type
    ("ViewsRequest", '{"tables": [], "localBytes": 0}'),                       # no version
    ("ViewGroup", '{"name": "a", "column": "0:a"}'),                     # null written, never left out
    ("ReadAnswer", '{"rows": 1, "kept": true}'),
])
def test_java_refuses_a_text_its_records_do_not_declare(bridge, kind, text):
    # Jackson's own errors arrive as Py4JJavaError, echo's comparison as PySpark's IllegalArgumentException
    with pytest.raises((Py4JJavaError, IllegalArgumentException)):
        bridge.echo(kind, text)


def test_python_refuses_a_text_java_would_not_write(bridge):
    text = json.loads(bridge.samples())["ViewsRequest"][0]
    renamed = text.replace('"localBytes"', '"local_bytes"')
    assert renamed != text
    with pytest.raises(CarbonOptionError, match="localBytes"):
        protocol.from_json(protocol.ViewsRequest, renamed)
    extra = json.dumps({**json.loads(text), "more": 1})
    assert protocol.from_json(protocol.ViewsRequest, extra) == protocol.from_json(protocol.ViewsRequest, text)
    with pytest.raises(CarbonOptionError, match="more"):
        protocol.from_json(protocol.ViewsRequest, extra, strict=True)


@pytest.mark.parametrize("message", [
    protocol.PlanReadsAnswer(answers=()), protocol.NativePlanAnswer(plan=None), protocol.ViewsAnswer(views=())])
def test_java_takes_only_an_answer_of_its_version(bridge, message):
    kind = type(message).__name__
    current = json.loads(protocol.to_json(message))
    assert current["v"] == protocol.VERSION and bridge.taken(kind, json.dumps(current))
    for v in (protocol.VERSION - 1, protocol.VERSION + 1):
        dropped = bridge.droppedAnswers()
        assert not bridge.taken(kind, json.dumps({**current, "v": v}))
        assert bridge.droppedAnswers() == dropped + 1  # counted, and said in the driver's log once per JVM
    del current["v"]
    assert not bridge.taken(kind, json.dumps(current))  # a text without "v" is no answer of this version
    assert not bridge.taken(kind, "null")


@pytest.mark.parametrize("option, answer", [
    (PLAN_READS_OPTION, protocol.PlanReadsAnswer(answers=())),
    (NATIVE_PLAN_OPTION, protocol.NativePlanAnswer(plan=None)),
    (MV_REWRITE_OPTION, protocol.ViewsAnswer(views=())),
])
def test_python_answers_nothing_to_a_request_of_another_version(tmp_path, option, answer):
    path = str(tmp_path / "t")
    carbon_ds.write_table(pa.table({"x": [1]}), path)
    # another version's request need not have this version's shape: it is not read past its "v"
    for v in (protocol.VERSION - 1, protocol.VERSION + 1):
        schema = CarbonDataSource({"path": path, option: json.dumps({"asked": [path], "v": v})}).schema()
        assert protocol.from_json(type(answer), schema.fields[0].metadata[option], strict=True) == answer
