#!/usr/bin/env bash
# Installs Debian's Chromium (package `chromium`, /usr/bin/chromium) for the documentation site's browser
# check (scripts/check-site.py, tests/test_docs_site.py), when it is missing and apt-get can be run: as root
# or through passwordless sudo. Otherwise it says why and exits 0; the check then skips, except under CI.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-chromium: no apt-get here; install Chromium yourself to run the site check" >&2
    exit 0
fi
if [ "$(id -u)" = 0 ]; then
    as_root=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    as_root=(sudo -n)
else
    echo "install-chromium: not root and no passwordless sudo; 'apt-get install chromium' as root runs the site check" >&2
    exit 0
fi
echo ">> installing Debian's chromium for the documentation site check"
log="$(mktemp)"
if ! { "${as_root[@]}" apt-get update -qq &&
       DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends chromium; } \
       >"$log" 2>&1; then
    tail -n 20 "$log" >&2
    echo "install-chromium: apt-get failed (log above)" >&2
    rm -f "$log"
    exit 1
fi
rm -f "$log"
chromium --version
