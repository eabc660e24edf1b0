#!/usr/bin/env bash
# Quick start, step 1: set everything up and run the demo.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/setup.sh"
exec "$root/.venv/bin/python" -m carbon_ds.demo "$@"
