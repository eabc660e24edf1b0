#!/usr/bin/env bash
# Builds the documentation site (mkdocs.yml, pages from docs/) into site/, strictly: a broken link, a link to
# a missing heading, a page left out of the nav or an API name the docstrings lack fails the build.
# --check also opens every built page in headless Chromium (scripts/check-site.py). Other arguments go to
# `mkdocs build` (e.g. --site-dir DIR).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/setup.sh"
cd "$root"
check=0
args=()
for a in "$@"; do
    if [ "$a" = "--check" ]; then check=1; else args+=("$a"); fi
done
# NO_MKDOCS_2_WARNING: mkdocs-material's banner about its successor, printed on every build
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict "${args[@]}"
if [ "$check" = 1 ]; then
    site=site
    for ((i = 0; i < ${#args[@]}; i++)); do
        case "${args[$i]}" in
            --site-dir|-d) site="${args[$((i + 1))]}" ;;
            --site-dir=*) site="${args[$i]#--site-dir=}" ;;
        esac
    done
    .venv/bin/python scripts/check-site.py "$site"
fi
