#!/usr/bin/env bash
# Builds the carbon-ds wheel into dist/ with the Spark extension jar inside it (carbon_ds/jars), so that an
# install needs a JRE but no JDK. The jar is compiled by scripts/build-jvm.sh against the given Python's
# PySpark (the newest in range: it runs on every PySpark the range admits, scripts/test-oldest.sh checks the
# lowest). Fails, saying why, when the jar cannot be built: a wheel without it would quietly lose the extension.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
py="${1:-${PYTHON:-.venv/bin/python}}"
jar=carbon_ds/jars/carbon-ds-spark.jar
bash scripts/build-jvm.sh "$py"
if [ ! -f "$jar" ]; then
    echo "the wheel needs $jar: building it takes a JDK 17+ ('javac' on PATH) and PySpark installed in $py" >&2
    exit 1
fi
rm -rf build/lib dist
# no build isolation: the jar is already built, and the build only needs setuptools from the same environment
"$py" -m pip wheel --quiet --no-deps --no-build-isolation -w dist . >&2
wheel=$(ls dist/carbon_ds-*.whl)
"$py" - "$wheel" "$jar" <<'PY'
import sys, zipfile
wheel, jar = sys.argv[1], sys.argv[2]
if jar not in zipfile.ZipFile(wheel).namelist():
    sys.exit(f"{wheel} does not hold {jar}")
PY
rm -rf build/lib
echo "$wheel"
