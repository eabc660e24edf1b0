#!/usr/bin/env bash
# Quick start, step 2: run the linter and the test suite.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/setup.sh"
cd "$root"
# CI checks the documentation site in Debian's Chromium (tests/test_docs_site.py): install it there if missing
if [ -n "${CI:-}" ]; then
    # a failed install fails tests/test_docs_site.py, not the whole run
    bash scripts/install-chromium.sh || echo "WARNING: Chromium could not be installed; the site check will fail" >&2
fi
.venv/bin/ruff check carbon_ds pyspark_carbondata tests benchmarks
exec .venv/bin/python -m pytest "$@"
