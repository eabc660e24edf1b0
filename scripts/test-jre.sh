#!/usr/bin/env bash
# The wheel (scripts/build-wheel.sh) on a machine with a JRE and no JDK, on the newest PySpark in range (the
# project's .venv; scripts/test-oldest.sh does the same on the oldest): the wheel is installed into a
# folder of its own that leads sys.path, Spark runs on a compiler-free runtime with no javac reachable
# (scripts/jre-env.sh), and the extension must load from the wheel's jar and plan (scripts/jre-check.py,
# then tests/spark/test_extension.py).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
py="$root/.venv/bin/python"
wheel=$(bash scripts/build-wheel.sh "$py")
target="$root/build/wheel-newest"
rm -rf "$target"
"$py" -m pip install --quiet --no-deps --target "$target" "$wheel"
source scripts/jre-env.sh
# PYTHONPATH reaches Spark's Python workers too, so they import the wheel's carbon_ds as the driver does
export PYTHONPATH="$target${PYTHONPATH:+:$PYTHONPATH}"
cd tests
"$py" "$root/scripts/jre-check.py"
exec "$py" -m pytest -q -p no:cacheprovider --rootdir "$root" -c "$root/pyproject.toml" spark/test_extension.py "$@"
