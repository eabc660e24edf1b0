"""Errors for the common mistakes end with the documentation page to read (carbon_ds.errors.see): every page
and heading anchor named that way exists, anchors as the site's table of contents makes them (Python-Markdown's
toc slugify, what mkdocs uses), and the messages users meet first carry one."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pyarrow as pa
import pytest
from markdown.extensions.toc import slugify

import carbon_ds
from carbon_ds.errors import CarbonError, CarbonOptionError

ROOT = Path(__file__).resolve().parents[2]


def _see_calls() -> list[tuple[str, str, str | None]]:
    """(where, page, anchor) of every see("page", "anchor") in the package's source."""
    out = []
    for path in sorted((ROOT / "carbon_ds").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "see":
                args = [a.value for a in node.args if isinstance(a, ast.Constant)]
                assert len(args) == len(node.args) >= 1, f"{path}:{node.lineno}: see() takes literal strings"
                out.append((f"{path.relative_to(ROOT)}:{node.lineno}", args[0], args[1] if len(args) > 1 else None))
    return out


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)  # '#' in code is no heading
    return {slugify(m.group(1).strip(), "-") for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*$", text, re.M)}


def test_every_page_and_anchor_named_by_an_error_exists():
    calls = _see_calls()
    assert len(calls) >= 8, calls  # the parser finds the calls (a test that cannot pass vacuously)
    for where, page, anchor in calls:
        doc = ROOT / "docs" / page
        assert doc.is_file(), f"{where} points at docs/{page}, which does not exist"
        if anchor is not None:
            assert anchor in _anchors(doc), f"{where} points at docs/{page}#{anchor}: no such heading"


def test_anchors_are_computed_as_the_site_makes_them():
    assert "filter-syntax" in _anchors(ROOT / "docs" / "pruning.md")
    assert "read-and-write-options" in _anchors(ROOT / "docs" / "options.md")
    assert "no-such-heading" not in _anchors(ROOT / "docs" / "pruning.md")


@pytest.mark.parametrize("mistake, page", [
    (lambda p: carbon_ds.read_table(p, filter="id >> 3"), "docs/pruning.md#filter-syntax"),
    (lambda p: carbon_ds.read_table(p, filter="lowr(s) = 'a'"), "docs/pruning.md#filter-syntax"),
    (lambda p: carbon_ds.write_table(pa.table({"id": [1]}), p, options={"compresor": "zstd"}),
     "docs/options.md#read-and-write-options"),
    (lambda p: carbon_ds.read_table(p + "_plain_folder"), "docs/tables.md"),
])
def test_common_mistakes_end_with_the_page_to_read(tmp_path, mistake, page):
    path = str(tmp_path / "t")
    carbon_ds.write_table(pa.table({"id": [1, 2], "s": ["a", "b"]}), path)
    (tmp_path / "t_plain_folder").mkdir()
    (tmp_path / "t_plain_folder" / "notes.txt").write_text("not a table")
    with pytest.raises(CarbonError) as info:
        mistake(path)
    assert str(info.value).endswith(f"(see {page})"), str(info.value)


def test_storage_options_mistake_points_at_object_stores():
    with pytest.raises(CarbonOptionError, match=r"\(see docs/object-stores\.md\)$"):
        carbon_ds.read_table("s3://bucket/t", storage_options={"acess_key": "x"})
