#!/usr/bin/env python3
"""Opens every page of the built documentation site in headless Chromium and fails on a broken link, a
missing image or a console error.

    python scripts/check-site.py [SITE_DIR]        # default: site/ (what `bash scripts/docs.sh` builds)

The site is served from a local HTTP server on 127.0.0.1 (a free port). Chromium (Debian's
/usr/bin/chromium, or $CHROMIUM) runs headless with a fresh profile and no background networking, driven
through the DevTools protocol over a websocket (the `websockets` package, in the `docs` extra), a few tabs
at once. For each page it records uncaught exceptions, console errors, failed or 4xx/5xx requests, and
images that did not load; then every link to the site itself must name a page the server has and, with
a fragment, an element id on that page. Links to other sites are not followed (the check runs offline).

Exit status: 0 when every page is clean, 1 with the problems listed, 2 when Chromium is missing.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import html.parser
import http.server
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

from websockets.sync.client import connect

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--disable-extensions", "--mute-audio", "--remote-debugging-port=0",
]
PAGE_TIMEOUT = 30.0  # seconds for one page to load
SETTLE = 0.25  # seconds after the load event for late console errors and requests
TABS = 3  # pages open at once: a page mostly waits for its renderer, so tabs overlap well

# what the page reports about itself once loaded: its images and the links it holds
PAGE_FACTS = """JSON.stringify({
  images: [...document.images].map(i => ({src: i.currentSrc || i.src, ok: i.complete && i.naturalWidth > 0})),
  links: [...document.querySelectorAll('a[href]')].map(a => a.href),
})"""


def chromium_path() -> str | None:
    return os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


@contextlib.contextmanager
def serve(site: Path):
    handler = functools.partial(_Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@contextlib.contextmanager
def chromium(binary: str):
    """A headless Chromium with a profile of its own; yields the DevTools HTTP endpoint."""
    profile = tempfile.mkdtemp(prefix="check-site-chromium-")
    proc = subprocess.Popen([binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        port_file = Path(profile) / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not port_file.exists() or not port_file.read_text().strip():
            if proc.poll() is not None:
                raise RuntimeError(f"{binary} exited with {proc.returncode}: {proc.stderr.read().decode()[-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{binary} did not open its DevTools port within 30 s")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port_file.read_text().split()[0]}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(profile, ignore_errors=True)


class Page:
    """One browser tab through the DevTools protocol: commands in order, events collected as they come."""

    def __init__(self, ws):
        self.ws = ws
        self.ids = itertools.count(1)
        self.events: list[dict] = []
        self.last_state = None  # what the tab showed when ``loaded`` gave up: [href, readyState]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")

    def loaded(self, url: str, timeout: float) -> bool:
        """Whether the tab shows ``url`` fully loaded within ``timeout`` seconds. Asked of the page itself,
        not inferred from load events: a new tab's own about:blank load event may come after the navigation
        was asked for, and the page's event may arrive while another command is answered."""
        deadline = time.monotonic() + timeout
        while True:
            state = self.call("Runtime.evaluate", returnByValue=True,
                              expression="[location.href, document.readyState]")["result"].get("value")
            if state == [url, "complete"]:
                return True
            if time.monotonic() >= deadline:
                self.last_state = state
                return False
            self.drain(0.1)

    def call(self, method: str, **params) -> dict:
        mid = next(self.ids)
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv(timeout=PAGE_TIMEOUT))
            if msg.get("id") == mid:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def wait_for(self, event: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while True:
            if any(e.get("method") == event for e in self.events):
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            try:
                self.events.append(json.loads(self.ws.recv(timeout=left)))
            except TimeoutError:
                return False

    def drain(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                self.events.append(json.loads(self.ws.recv(timeout=left)))
            except TimeoutError:
                return

    @staticmethod
    def new_tab(devtools: str) -> str:
        req = urllib.request.Request(f"{devtools}/json/new?about:blank", method="PUT")
        with urllib.request.urlopen(req) as r:
            return json.load(r)["webSocketDebuggerUrl"]


def problems_of_load(events: list[dict], loader: str | None = None) -> list[str]:
    """Console errors, exceptions and failed requests among a page load's DevTools events; requests of
    another document than the one ``loader`` loads (a late request of the page before) are left out."""
    found = []
    urls = {}
    mine = {e["params"]["requestId"] for e in events if e.get("method") == "Network.requestWillBeSent"
            and loader in (None, e["params"].get("loaderId"))}
    for e in events:
        method, p = e.get("method"), e.get("params", {})
        if (method or "").startswith("Network.") and p.get("requestId") not in mine:
            continue
        if method == "Runtime.exceptionThrown":
            d = p["exceptionDetails"]
            found.append(f"uncaught exception: {d.get('exception', {}).get('description') or d.get('text')}")
        elif method == "Runtime.consoleAPICalled" and p["type"] in ("error", "assert"):
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
            found.append(f"console.{p['type']}: {text}")
        elif method == "Log.entryAdded" and p["entry"]["level"] == "error":
            found.append(f"console error: {p['entry']['text']} ({p['entry'].get('url', '')})")
        elif method == "Network.requestWillBeSent":
            urls[p["requestId"]] = p["request"]["url"]
        elif method == "Network.responseReceived" and p["response"]["status"] >= 400:
            found.append(f"HTTP {p['response']['status']} for {p['response']['url']}")
        elif method == "Network.loadingFailed" and not p.get("canceled"):
            found.append(f"request failed ({p.get('errorText')}): {urls.get(p['requestId'], p['requestId'])}")
    return found


class _Ids(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("id", "name") and value:
                self.ids.add(value)


def page_of(site: Path, path: str) -> Path | None:
    """The file the server answers a site path with, or None (a 404)."""
    target = site / urllib.parse.unquote(path).lstrip("/")
    if target.is_dir():
        target = target / "index.html"
    return target if target.is_file() else None


@functools.cache
def ids_of(page: Path) -> frozenset[str]:
    parser = _Ids()
    parser.feed(page.read_text(encoding="utf-8", errors="replace"))
    return frozenset(parser.ids)


def check_page(tab: Page, base: str, site: Path, rel: str) -> tuple[list[str], dict[str, int]]:
    """The problems of one page, opened in ``tab``, and what was checked."""
    stats = {"links": 0, "images": 0, "external links": 0}
    url = f"{base}/{rel}"
    tab.events.clear()
    loader = tab.call("Page.navigate", url=url).get("loaderId")
    found = []
    if not tab.loaded(url, PAGE_TIMEOUT):
        # once more: a navigation lost by a loaded machine is not a fault of the page
        tab.events.clear()
        loader = tab.call("Page.navigate", url=url).get("loaderId")
        if not tab.loaded(url, PAGE_TIMEOUT):
            found.append(f"did not finish loading within {PAGE_TIMEOUT:.0f} s, twice (the tab showed "
                         f"{tab.last_state!r})")
    tab.drain(SETTLE)
    found += problems_of_load(tab.events, loader)
    facts = json.loads(tab.call("Runtime.evaluate", expression=PAGE_FACTS, returnByValue=True)["result"]["value"])
    stats["images"] += len(facts["images"])
    found += [f"image did not load: {i['src']}" for i in facts["images"] if not i["ok"]]
    for href in sorted(set(facts["links"])):
        link = urllib.parse.urlsplit(href)
        if link.scheme not in ("http", "https"):
            continue  # mailto:, javascript:
        if f"{link.scheme}://{link.netloc}" != base:
            stats["external links"] += 1
            continue
        stats["links"] += 1
        target = page_of(site, link.path)
        if target is None:
            found.append(f"broken link: {href} (no such page)")
        elif (link.fragment and target.suffix == ".html" and
                urllib.parse.unquote(link.fragment) not in ids_of(target)):
            found.append(f"broken link: {href} (no element with id '{link.fragment}')")
    return found, stats


def check(site: Path, binary: str, tabs: int = TABS) -> tuple[dict[str, list[str]], dict[str, int]]:
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html"))
    problems: dict[str, list[str]] = {}
    stats = {"pages": len(pages), "links": 0, "images": 0, "external links": 0}
    todo = list(reversed(pages))
    lock = threading.Lock()

    errors: list[BaseException] = []

    def work(devtools: str, base: str) -> None:
        try:
            # a tab of its own for each worker: the first tab found in /json/list may be one another
            # worker has just opened, and two workers driving one tab read each other's events
            url = Page.new_tab(devtools)
            with connect(url, max_size=None, open_timeout=10) as ws:
                tab = Page(ws)
                while True:
                    with lock:
                        if not todo or errors:
                            return
                        rel = todo.pop()
                    found, counted = check_page(tab, base, site, rel)
                    with lock:
                        for k, v in counted.items():
                            stats[k] += v
                        if found:
                            problems[rel] = found
        except BaseException as e:  # re-raised in the main thread
            with lock:
                errors.append(e)

    with serve(site) as base, chromium(binary) as devtools:
        workers = [threading.Thread(target=work, args=(devtools, base)) for _ in range(tabs)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    if errors:
        raise errors[0]
    return dict(sorted(problems.items())), stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("site", nargs="?", default=str(Path(__file__).resolve().parents[1] / "site"))
    args = parser.parse_args(argv)
    site = Path(args.site)
    if not (site / "index.html").is_file():
        print(f"check-site: {site} holds no built site (index.html): run `bash scripts/docs.sh` first",
              file=sys.stderr)
        return 1
    binary = chromium_path()
    if binary is None:
        print("check-site: no Chromium found (chromium on PATH or $CHROMIUM); on Debian: "
              "apt-get install chromium, or bash scripts/install-chromium.sh", file=sys.stderr)
        return 2
    start = time.monotonic()
    problems, stats = check(site, binary)
    took = time.monotonic() - start
    summary = ", ".join(f"{v} {k}" for k, v in stats.items())
    if problems:
        for page, found in problems.items():
            print(f"{page}:")
            for p in found:
                print(f"  {p}")
        print(f"check-site: {sum(map(len, problems.values()))} problems on {len(problems)} pages ({summary}; "
              f"{took:.1f} s)")
        return 1
    print(f"check-site: every page clean ({summary}; {took:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
