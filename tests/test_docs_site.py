"""The documentation site builds strictly and its pages open cleanly in headless Chromium.

``mkdocs build --strict`` (what ``scripts/docs.sh`` runs) fails on a broken link, a link to a missing
heading, a page of docs/ the nav leaves out and a docstring mkdocstrings cannot render; the build must
also stay offline (no web font or CDN address in the pages). ``scripts/check-site.py`` then opens every
built page in Debian's Chromium and fails on a broken link, a missing image or a console error; that
checker is itself tested on a small site with one of each fault. Without mkdocs (the ``docs`` extra) or
Chromium these skip, except under CI, whose scripts install both (scripts/setup.sh,
scripts/install-chromium.sh).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECK_SITE = ROOT / "scripts" / "check-site.py"
IN_CI = bool(os.environ.get("CI"))


def _need(found: bool, what: str) -> None:
    if not found:
        if IN_CI:
            pytest.fail(f"{what} is missing in CI, where the project's scripts install it")
        pytest.skip(f"{what} is not installed")


def _can_install_packages() -> bool:
    """Whether scripts/install-chromium.sh could run apt-get here (as root, or through passwordless sudo)."""
    if shutil.which("apt-get") is None:
        return False
    if os.geteuid() == 0:
        return True
    return shutil.which("sudo") is not None and subprocess.run(["sudo", "-n", "true"], capture_output=True).returncode == 0


def _chromium() -> None:
    found = bool(os.environ.get("CHROMIUM") or shutil.which("chromium"))
    what = "Chromium (Debian's package chromium: bash scripts/install-chromium.sh)"
    if not found and IN_CI and not _can_install_packages():
        pytest.skip(f"{what} is not installed, and this CI machine cannot install packages (not root, no sudo)")
    _need(found, what)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    _need(shutil.which("mkdocs", path=str(Path(sys.executable).parent)) is not None
          or _importable("mkdocs"), "mkdocs (pip install -e '.[docs]')")
    out = tmp_path_factory.mktemp("site")
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=ROOT,
                       capture_output=True, text=True, timeout=600, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert r.returncode == 0, f"mkdocs build --strict failed:\n{r.stdout[-3000:]}\n{r.stderr[-6000:]}"
    return out


def _importable(name: str) -> bool:
    try:
        __import__(name)
    except ImportError:
        return False
    return True


def test_site_builds_strictly_with_every_page(site):
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for doc in sorted((ROOT / "docs").glob("*.md")):
        assert re.search(rf":\s*{re.escape(doc.name)}\s*$", nav, re.M), f"{doc.name} is not in mkdocs.yml's nav"
        page = site / ("index.html" if doc.stem == "index" else f"{doc.stem}/index.html")
        assert page.is_file(), f"{doc.name} was not built to {page}"


def test_site_is_offline(site):
    """Nothing in the built pages points at a font service or a CDN: the site works without the internet."""
    for page in site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        for host in ("fonts.googleapis.com", "fonts.gstatic.com", "cdn.jsdelivr.net", "unpkg.com", "cdnjs"):
            assert host not in text, f"{page.relative_to(site)} loads from {host}"


def test_api_reference_documents_every_public_name(site):
    import carbon_ds

    text = (site / "api" / "index.html").read_text(encoding="utf-8")
    for name in carbon_ds.__all__:
        if name != "__version__":
            assert re.search(rf'id="[\w.]*\b{name}"', text), f"the API page has no entry for carbon_ds.{name}"


def _check(site_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(CHECK_SITE), str(site_dir)], capture_output=True, text=True,
                          timeout=300)


@pytest.mark.slow
def test_every_page_opens_cleanly_in_chromium(site):
    _chromium()
    r = _check(site)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    assert "every page clean" in r.stdout


def test_the_browser_check_finds_each_fault(tmp_path):
    """The oracle for the checker: a site with one broken link, a link to a missing id, a missing image and
    a console error, beside a clean page."""
    _chromium()
    _need(_importable("websockets"), "websockets (pip install -e '.[docs]')")
    png = (ROOT / "docs" / "img" / "tpch.png").read_bytes()
    (tmp_path / "img.png").write_bytes(png)
    head = '<html><head><link rel="icon" href="data:,"></head>'  # no /favicon.ico request
    (tmp_path / "index.html").write_text(
        head + '<body><h1 id="top">ok</h1><img src="img.png"><a href="good.html#here">fine</a>'
        '<a href="https://example.org/">elsewhere</a></body></html>', encoding="utf-8")
    (tmp_path / "good.html").write_text(head + '<body><p id="here">here</p></body></html>', encoding="utf-8")
    (tmp_path / "bad.html").write_text(
        head + '<body><a href="missing.html">gone</a><a href="good.html#nowhere">no id</a>'
        '<img src="absent.png"><script>console.error("boom")</script></body></html>', encoding="utf-8")
    r = _check(tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    out = r.stdout
    bad = out[out.index("bad.html:"):]
    assert "missing.html (no such page)" in bad
    assert "good.html#nowhere (no element with id 'nowhere')" in bad
    assert "image did not load" in bad and "absent.png" in bad
    assert "console.error: boom" in bad
    assert "index.html:" not in out and "good.html:" not in out.replace("good.html#", "")
    assert "favicon" not in out
    assert "(3 pages, 3 links, 2 images, 1 external links;" in out


def _slug(heading: str) -> str:
    """The id Python-Markdown's toc extension gives a heading (what mkdocs links to)."""
    text = re.sub(r"[`*_\[\]()]|<[^>]+>", "", heading).strip().lower()
    return re.sub(r"[\s]+", "-", re.sub(r"[^\w\s-]", "", text))


def test_readme_is_a_short_first_visit_whose_links_resolve():
    """README.md stays under 10 KB, and each of its links into docs/ names a page and heading that exist
    (mkdocs checks the pages' own links; the README is outside the site)."""
    readme = ROOT / "README.md"
    assert readme.stat().st_size < 10_000, f"README.md is {readme.stat().st_size} bytes"
    text = readme.read_text(encoding="utf-8")
    links = re.findall(r"\]\((docs/[^)#\s]*)(?:#([^)\s]+))?\)", text)
    assert len(links) >= 10
    for target, anchor in links:
        assert (ROOT / target).exists(), f"README links to {target}, which does not exist"
        if anchor:
            headings = re.findall(r"^#+ (.+)$", (ROOT / target).read_text(encoding="utf-8"), re.M)
            assert anchor in {_slug(h) for h in headings}, f"README links to {target}#{anchor}: no such heading"
    assert "bash scripts/test.sh" in text and "bash scripts/demo.sh" in text
