"""benchmarks/scale.py builds its tables of thousands of segments without a commit per segment: the table it
writes must be the one real appends write (same entries, segment files, file layout and rows), or its
figures would measure something users never have."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pyarrow as pa

import carbon_ds
from carbon_ds.table import CarbonTable

BENCH = next(p / "benchmarks" for p in Path(__file__).resolve().parents if (p / "benchmarks" / "scale.py").is_file())
TIMES = {"timestamp", "loadStartTime"}


def _scale():
    sys.path.insert(0, str(BENCH))  # scale.py imports its sibling common.py lazily
    spec = importlib.util.spec_from_file_location("scale", BENCH / "scale.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _status(path) -> list[dict]:
    return json.loads((Path(path) / "Metadata" / "tablestatus").read_text())


def _layout(path) -> list[str]:
    """Files of the table with the load times in their names blanked out."""
    out = []
    for d, _dirs, files in os.walk(path):
        for f in files:
            rel = os.path.relpath(os.path.join(d, f), path)
            if rel.startswith("LockFiles"):
                continue
            out.append("".join("#" if c.isdigit() else c for c in rel.replace(os.sep, "/")))
    return sorted(out)


def test_built_table_is_the_one_appends_write(tmp_path):
    scale = _scale()
    built, appended = tmp_path / "built", tmp_path / "appended"
    scale.build_carbon(str(built), range(3), rows=10)
    for s in range(3):
        carbon_ds.write_table(scale.segment_rows(s, 10), appended)

    a, b = _status(built), _status(appended)
    assert [sorted(e) for e in a] == [sorted(e) for e in b]
    assert ([{k: v for k, v in e.items() if k not in TIMES | {"segmentFile"}} for e in a] ==
        [{k: v for k, v in e.items() if k not in TIMES | {"segmentFile"}} for e in b])
    for e in a:
        assert int(e["timestamp"]) > int(e["loadStartTime"])
        assert e["segmentFile"] == f"{e['loadName']}_{e['timestamp']}.segment"
    seg_a = [json.loads((built / "Metadata" / "segments" / e["segmentFile"]).read_text()) for e in a]
    seg_b = [json.loads((appended / "Metadata" / "segments" / e["segmentFile"]).read_text()) for e in b]
    strip = [{k: {**v, "files": len(v["files"])} for k, v in s["locationMap"].items()} for s in seg_a]
    assert strip == [{k: {**v, "files": len(v["files"])} for k, v in s["locationMap"].items()} for s in seg_b]
    assert _layout(built) == _layout(appended)

    want = pa.concat_tables([scale.segment_rows(s, 10) for s in range(3)])
    assert carbon_ds.read_table(built).sort_by("id").equals(want)
    assert carbon_ds.read_table(appended).sort_by("id").equals(want)
    assert carbon_ds.read_table(built, filter="id = 17").to_pylist() == want.filter(pa.compute.equal(
        want["id"], 17)).to_pylist()
    # the built table takes further appends as any other
    carbon_ds.write_table(scale.segment_rows(3, 10), built)
    assert [s.id for s in CarbonTable.open(built).segments()] == ["0", "1", "2", "3"]
    assert carbon_ds.scan(built).count() == 40


def test_builder_refuses_segments_that_exist(tmp_path):
    scale = _scale()
    scale.build_carbon(str(tmp_path / "t"), range(2), rows=5)
    try:
        scale.build_carbon(str(tmp_path / "t"), range(1, 3), rows=5)
    except ValueError as e:
        assert "already exist" in str(e)
    else:
        raise AssertionError("segment 1 written twice")
    assert carbon_ds.scan(tmp_path / "t").count() == 10
