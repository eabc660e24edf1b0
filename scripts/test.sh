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
# Which cases: by default every case not marked `slow` (about 19 minutes on 2 cores); `--slow` runs only the
# slow ones (new Python processes and JVMs, Apache CarbonData's jars over 340 cases, the differential check,
# second time zones, the longest scenarios: about 25-30 minutes), `--all` both in one run. CI runs the default and then `--slow` (.ci/run). A `-m` of the
# caller's own replaces the choice.
marks=(-m "not slow")
case "${1:-}" in
    --slow) marks=(-m slow); shift ;;
    --all) marks=(); shift ;;
esac
for arg in "$@"; do
    if [ "$arg" = -m ]; then marks=(); fi
done
# CARBON_DS_TEST_WORKERS=N runs pytest on N workers (pytest-xdist), each taking whole files so that
# module-scoped fixtures are built once and each has its own SparkSession. One process by default: on
# 2 cores two workers were no faster, quiet or loaded (docs/development.md).
workers="${CARBON_DS_TEST_WORKERS:-0}"
xdist=()
if [ "$workers" != 0 ]; then
    xdist=(-n "$workers" --dist loadfile --no-loadscope-reorder)
fi
exec .venv/bin/python -m pytest ${xdist[@]+"${xdist[@]}"} ${marks[@]+"${marks[@]}"} "$@"
