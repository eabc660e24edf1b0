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
# CARBON_DS_TEST_WORKERS=N runs pytest on N workers (pytest-xdist), each taking whole files so that
# module-scoped fixtures are built once and each has its own SparkSession. One process by default: on a
# 2-core machine already loaded by other work, two workers were slower (docs/development.md).
workers="${CARBON_DS_TEST_WORKERS:-0}"
xdist=()
if [ "$workers" != 0 ]; then
    xdist=(-n "$workers" --dist loadfile --no-loadscope-reorder)
fi
exec .venv/bin/python -m pytest ${xdist[@]+"${xdist[@]}"} "$@"
