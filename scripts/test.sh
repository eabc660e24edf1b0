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
# two workers (pytest-xdist), each taking whole files so that module-scoped fixtures are built once: much of
# the suite waits on JVM start-up, Spark jobs and child processes, so two overlap well even on two cores.
# CARBON_DS_TEST_WORKERS sets another count (0: one process); a later -n on the command line wins too.
exec .venv/bin/python -m pytest -n "${CARBON_DS_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder "$@"
