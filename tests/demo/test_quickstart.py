"""The quick-start demo: it never deletes a folder it did not create, and runs its pure-Python half when
Spark cannot start (no Java, or Java older than 17)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from carbon_ds.demo import quickstart


def _fake_java(tmp_path: Path, version: str) -> Path:
    home = tmp_path / f"jdk{version}"
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text(f'#!/bin/sh\necho \'openjdk version "{version}" 2020-01-01\' >&2\n')
    java.chmod(0o755)
    return home


def test_out_folder_that_is_not_a_demo_table_is_never_deleted(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("precious")
    with pytest.raises(SystemExit, match="non-empty folder the demo did not create"):
        quickstart.prepare_out(str(mine))
    assert (mine / "thesis.tex").read_text() == "precious"
    (tmp_path / "file").write_text("x")
    with pytest.raises(SystemExit, match="is a file"):
        quickstart.prepare_out(str(tmp_path / "file"))
    quickstart.prepare_out(str(tmp_path / "new"))  # absent: fine, nothing created yet
    demo = tmp_path / "demo"
    demo.mkdir()
    (demo / quickstart.MARKER).write_text("")
    quickstart.prepare_out(str(demo))
    assert not demo.exists()


@pytest.mark.parametrize("version, major", [("11.0.2", 11), ("1.8.0_292", 8), ("17.0.15", 17), ("21", 21)])
def test_java_version_is_read_from_java_home(tmp_path, monkeypatch, version, major):
    monkeypatch.setenv("JAVA_HOME", str(_fake_java(tmp_path, version)))
    assert quickstart.java_major() == major


@pytest.mark.slow
def test_demo_with_old_java_runs_its_pure_python_half(tmp_path):
    env = dict(os.environ, JAVA_HOME=str(_fake_java(tmp_path, "11.0.2")), CARBON_DS_PROGRESS="0")
    out = tmp_path / "t"
    r = subprocess.run([sys.executable, "-m", "carbon_ds.demo", "--rows", "3000", "--out", str(out)],
                       capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Java is version 11; Spark 4 needs Java 17 or newer" in r.stderr
    assert "rows: 9,000" in r.stdout and "blocklets read" in r.stdout
    last = r.stdout.strip().splitlines()[-1]
    cmd = last.split("look inside it with: ", 1)[1].split()
    assert subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=120).returncode == 0
    # a second run replaces its own table
    r2 = subprocess.run([sys.executable, "-m", "carbon_ds.demo", "--rows", "1000", "--out", str(out)],
                        capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert r2.returncode == 0 and "rows: 3,000" in r2.stdout
