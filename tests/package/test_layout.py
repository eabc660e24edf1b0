"""The package's layering, measured from the source: no import circles, imports only downwards, function-level
imports only for optional dependencies, no private names across modules, every module importable alone, no
backslash line continuations (a structure walker stops at them; brackets say the same)."""

from __future__ import annotations

import ast
import io
import json
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "carbon_ds"

# table/partitions/ is each partitioning flavour's one home: its modules sit on the floors of what they do.
_P = "carbon_ds.table.partitions."
PARTITIONS_META = [_P + "partitioning", _P + "id_spec"]
PARTITIONS_OPS = [_P + "hive_ddl", _P + "id_ddl"]
READ_SIDE = ["carbon_ds.table.read", _P + "hive_pruning", _P + "id_pruning", _P + "id_partition_values"]
WRITE_SIDE = ["carbon_ds.table.loads", _P + "hive_load", _P + "id_load"]
# Lowest first; a module may import its own layer and those below it.
LAYERS = [
    ("ground", ["carbon_ds.errors", "carbon_ds.fs", "carbon_ds.fs_s3", "carbon_ds.faults", "carbon_ds.progress", "carbon_ds.format", "carbon_ds.expressions",
                "carbon_ds.ddl", "carbon_ds.names"]),
    ("io", ["carbon_ds.readers", "carbon_ds.writers"]),
    ("meta", ["carbon_ds.table.meta", "carbon_ds.table.partitions", *PARTITIONS_META]),
    ("read-write", [*READ_SIDE, *WRITE_SIDE]),
    ("ops", ["carbon_ds.table.ops", *PARTITIONS_OPS, "carbon_ds.table.loads.start"]),
    ("facade", ["carbon_ds.table.table", "carbon_ds.table"]),
    ("engines", ["carbon_ds.spark"]),
    ("entry", ["carbon_ds.api", "carbon_ds.cli", "carbon_ds.demo", "carbon_ds.polars", "carbon_ds.duckdb", "carbon_ds"]),
]
# the read side and the write side share a layer but never import each other
SIBLINGS_APART = [(READ_SIDE, WRITE_SIDE)]
# format/'s own floors, lowest first: the metadata codec and structs, the Arrow type mapping, one column's
# pages; the file modules (format/ itself) stand on all of them
FORMAT_FLOORS = [["carbon_ds.format.thrift"], ["carbon_ds.format.arrow_types"], ["carbon_ds.format.pages"]]
MAX_INNER_IMPORTS = 15


def _modules() -> dict[str, Path]:
    out = {}
    for p in PKG.rglob("*.py"):
        name = ".".join(p.relative_to(ROOT).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = p
    return out


MODULES = _modules()


def _target(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(mod: str) -> list[tuple[str, bool, ast.AST]]:
    """(imported carbon_ds module, inside a function?, node) for every import outside TYPE_CHECKING."""
    tree = ast.parse(MODULES[mod].read_text(encoding="utf-8"))
    parents = {c: n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}
    out = []
    for n in ast.walk(tree):
        if not isinstance(n, ast.Import | ast.ImportFrom):
            continue
        p, in_func, typing_only = parents.get(n), False, False
        while p is not None:
            in_func |= isinstance(p, ast.FunctionDef | ast.AsyncFunctionDef)
            typing_only |= isinstance(p, ast.If) and "TYPE_CHECKING" in ast.unparse(p.test)
            p = parents.get(p)
        if typing_only:
            continue
        if isinstance(n, ast.Import):
            names = [a.name for a in n.names]
        else:
            # ``from pkg import submodule`` names the submodule; the package's __init__ is lazy
            subs = [f"{n.module}.{a.name}" for a in n.names]
            names = subs if all(x in MODULES for x in subs) else [n.module or ""] + subs
        for name in names:
            t = _target(name)
            if t and t != mod and t.startswith("carbon_ds"):
                out.append((t, in_func, n))
    return out


def _layer(mod: str) -> int:
    best, rank = -1, None
    for i, (_name, prefixes) in enumerate(LAYERS):
        for pre in prefixes:
            if (mod == pre or mod.startswith(pre + ".")) and len(pre) > best:
                best, rank = len(pre), i
    assert rank is not None, f"{mod} is in no layer; add it to LAYERS"
    return rank


def _within(mod: str, prefixes: list[str]) -> bool:
    return any(mod == p or mod.startswith(p + ".") for p in prefixes)


def _graph() -> dict[str, set[str]]:
    return {m: {t for t, _f, _n in _imports(m)} for m in MODULES}


def test_no_import_circles():
    graph = _graph()
    index, low, stack, on, sccs = {}, {}, [], set(), []

    def strong(v, counter=[0]):  # noqa: B006 - Tarjan's counter
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    for v in graph:
        if v not in index:
            strong(v)
    assert sccs == []


def test_imports_only_go_downwards():
    wrong = []
    for mod in MODULES:
        if mod == "carbon_ds":
            continue  # the lazy face names everything
        for t, _in_func, n in _imports(mod):
            if _layer(t) > _layer(mod) and not (mod.startswith("carbon_ds.table.") and t == "carbon_ds.table"):
                wrong.append(f"{mod} ({LAYERS[_layer(mod)][0]}) imports {t} ({LAYERS[_layer(t)][0]}) "
                             f"at line {n.lineno}")
            for a, b in SIBLINGS_APART:
                for x, y in ((a, b), (b, a)):
                    if _within(mod, x) and _within(t, y) and _layer(mod) == _layer(t):
                        wrong.append(f"{mod} imports {t}: the read side and the write side must not import "
                                     "each other")
    assert wrong == []


def test_format_modules_import_only_their_floor_and_those_below():
    wrong = []
    for mod in MODULES:
        for i, floor in enumerate(FORMAT_FLOORS):
            if not _within(mod, floor):
                continue
            allowed = [p for f in FORMAT_FLOORS[: i + 1] for p in f]
            for t, _in_func, n in _imports(mod):
                if t.startswith("carbon_ds.format.") and not _within(t, allowed):
                    wrong.append(f"{mod} imports {t} at line {n.lineno}: above its floor in format/")
    assert wrong == []


def test_function_level_imports_are_few_and_for_optional_dependencies():
    inner = sorted({(m, t) for m in MODULES if m != "carbon_ds" for t, in_func, _n in _imports(m) if in_func})
    assert len(inner) <= MAX_INNER_IMPORTS, inner
    # the rest of the function-level imports are of optional packages only
    optional = {"pyspark", "pyorc", "pandas", "polars", "duckdb", "matplotlib", "tqdm"}
    for mod, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)):
            for n in ast.walk(fn):
                if isinstance(n, ast.Import | ast.ImportFrom):
                    names = [a.name for a in n.names] if isinstance(n, ast.Import) else [n.module or ""]
                    for name in names:
                        top = name.split(".")[0]
                        assert top in optional | {"carbon_ds"} or top in sys.stdlib_module_names, (
                            f"{mod}:{n.lineno} imports {name} inside a function")


def test_no_private_name_is_imported_across_modules():
    found = []
    for mod, path in MODULES.items():
        for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("carbon_ds"):
                found += [f"{mod}:{n.lineno} {n.module}.{a.name}" for a in n.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
    assert found == []


def backslash_continuations(source: str) -> list[int]:
    """Lines ending in a backslash outside a string literal."""
    strings = [(t.start, t.end) for t in tokenize.generate_tokens(io.StringIO(source).readline)
               if t.type == tokenize.STRING]
    return [i for i, line in enumerate(source.splitlines(), 1) if line.endswith("\\")
            and not any(a <= (i, len(line) - 1) < b for a, b in strings)]


def test_backslash_continuations_are_found_outside_strings_only():
    assert backslash_continuations('x = 1 + \\\n    2\ny = """a \\\nb"""\n') == [1]


def test_no_backslash_line_continuations():
    found = [f"{p.relative_to(ROOT)}:{i}" for folder in ("carbon_ds", "pyspark_carbondata", "tests", "benchmarks", "scripts")
             for p in sorted((ROOT / folder).rglob("*.py")) for i in backslash_continuations(p.read_text(encoding="utf-8"))]
    assert found == []


def top_level_outside_imports() -> list[str]:
    """Every module outside the package that a package module imports at its top level (in a top-level try
    too), names sorted: what import_alone.py loads before forking a child per package module."""
    found = set()
    for path in MODULES.values():
        body = list(ast.parse(path.read_text(encoding="utf-8")).body)
        for node in body:
            if isinstance(node, ast.Try):
                body.extend(node.body)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module)
    return sorted(n for n in found if n.split(".")[0] not in ("carbon_ds", "pyspark_carbondata", "__future__"))


@pytest.fixture(scope="module")
def import_alone():
    """Imports a module in a child forked from one parent with only the outside modules loaded
    (import_alone.py): the package's modules each import alone, without a new interpreter's start apiece."""
    server = subprocess.Popen([sys.executable, str(Path(__file__).with_name("import_alone.py")),
                               *top_level_outside_imports()], cwd=ROOT, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)

    def run(module: str) -> dict:
        server.stdin.write(module + "\n")
        server.stdin.flush()
        line = server.stdout.readline()
        if not line:
            raise AssertionError(f"import_alone.py ended before answering for {module} ({server.wait()})")
        return json.loads(line)

    yield run
    server.stdin.close()
    server.wait(timeout=60)


def test_outside_imports_are_found_at_top_level_and_in_try_blocks():
    found = top_level_outside_imports()
    assert {"numpy", "pyarrow", "pyarrow.compute"} <= set(found)
    assert not any(n.startswith(("carbon_ds", "__future__")) for n in found)


def test_a_module_failing_to_import_is_reported(import_alone):
    got = import_alone("carbon_ds.no_such_module_here")
    assert not got["ok"] and "ModuleNotFoundError" in got["error"]


@pytest.mark.parametrize("module", sorted(m for m in MODULES if not m.endswith("__main__")))
def test_every_module_imports_alone_in_a_fresh_interpreter(module, import_alone):
    got = import_alone(module)
    assert got["ok"], got["error"][-2000:]
