"""The option, conf and property names shared with the Spark extension are defined once per language:
carbon_ds/names.py and jvm/src's Names.java hold the same constants, and neither tree spells them elsewhere."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import carbon_ds.names

ROOT = Path(__file__).resolve().parents[2]
NAMES_JAVA = ROOT / "jvm" / "src" / "main" / "java" / "carbonds" / "spark" / "Names.java"
JAVA_SOURCES = ROOT / "jvm" / "src"

_STRING = re.compile(r'static\s+final\s+String\s+(\w+)\s*=\s*"([^"\\]*)"\s*;')
_LIST = re.compile(r'static\s+final\s+List<String>\s+(\w+)\s*=\s*List\.of\(([^)]*)\)\s*;', re.S)
_FIELD = re.compile(r'static\s+final\s+[\w<>]+\s+(\w+)\s*=')


def java_names(text: str) -> dict[str, str | tuple[str, ...]]:
    """NAME -> value of every constant of a Names.java text; a constant of any other shape is an error."""
    text = re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.S)
    out: dict[str, str | tuple[str, ...]] = {m[1]: m[2] for m in _STRING.finditer(text)}
    for m in _LIST.finditer(text):
        items = [i.strip() for i in m[2].split(",") if i.strip()]
        assert all(re.fullmatch(r'"[^"\\]*"', i) for i in items), f"Names.java {m[1]}: expected string literals"
        out[m[1]] = tuple(i[1:-1] for i in items)
    unread = {m[1] for m in _FIELD.finditer(text)} - set(out)
    assert not unread, f"Names.java: constants {sorted(unread)} are neither a String literal nor a List.of literals"
    return out


def python_names() -> dict[str, str | tuple[str, ...]]:
    return {k: v for k, v in vars(carbon_ds.names).items() if k.isupper() and not k.startswith("_")}


def test_the_two_lists_agree_exactly():
    java, python = java_names(NAMES_JAVA.read_text(encoding="utf-8")), python_names()
    assert len(java) >= 20  # the parse found the constants at all
    only_java = {k: java[k] for k in java.keys() - python.keys()}
    only_python = {k: python[k] for k in python.keys() - java.keys()}
    differ = {k: (java[k], python[k]) for k in java.keys() & python.keys() if java[k] != python[k]}
    assert not only_java and not only_python and not differ, (
        f"Names.java and carbon_ds/names.py differ: only in Java {only_java}, only in Python {only_python}, "
        f"different values (Java, Python) {differ}")


def test_the_parse_sees_a_change():
    text = NAMES_JAVA.read_text(encoding="utf-8")
    changed = text.replace('"carbon_ds.pruned"', '"carbon_ds.prunedX"')
    added = text.replace("private Names()", 'static final String EXTRA_OPTION = "extra";\n    private Names()')
    listed = text.replace('"local_dictionary_threshold")', '"local_dictionary_threshold", "x")')
    assert java_names(changed)["PRUNED_OPTION"] == "carbon_ds.prunedX"
    assert java_names(added)["EXTRA_OPTION"] == "extra"
    assert java_names(listed)["TABLE_OPTIONS"][-1] == "x"


def _shared_values(with_prefix_only: bool) -> set[str]:
    out = set()
    for v in python_names().values():
        for s in (v if isinstance(v, tuple) else (v,)):
            if s.startswith("carbon_ds.") or not with_prefix_only:
                out.add(s)
    # "carbondata" is also a STORED AS keyword and a tablestatus file format, spelled where those are meant
    return out - {carbon_ds.names.SOURCE}


def test_java_spells_the_names_only_in_names_java():
    shared = _shared_values(with_prefix_only=False)
    found = []
    for path in sorted(JAVA_SOURCES.rglob("*.java")):
        if path == NAMES_JAVA:
            continue
        code = re.sub(r"/\*.*?\*/|//[^\n]*", "", path.read_text(encoding="utf-8"), flags=re.S)
        found += [f"{path.name}: {s!r}" for s in re.findall(r'"([^"\\]*)"', code) if s in shared]
    assert not found, f"use Names.java's constants instead of: {found}"


def test_python_spells_the_prefixed_names_only_in_names_py():
    # the unprefixed option names ("filter", "segments") are ordinary words elsewhere; the prefixed ones are not
    shared = _shared_values(with_prefix_only=True)
    found = []
    for path in sorted((ROOT / "carbon_ds").rglob("*.py")):
        if path == Path(carbon_ds.names.__file__).resolve():
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in shared:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}")
    assert not found, f"use carbon_ds.names instead of: {found}"
