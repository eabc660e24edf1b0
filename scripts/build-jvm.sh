#!/usr/bin/env bash
# Builds carbon_ds/jars/carbon-ds-spark.jar (the Spark session extension, jvm/src) with the JDK's javac against
# the jars of the PySpark that the given Python has installed: no network, no build tool. Rebuilds only when
# the sources or the PySpark version change. Without a JDK it says so and exits 0: carbon-ds then works on
# its pure-Python path.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
py="${1:-${PYTHON:-.venv/bin/python}}"
out=carbon_ds/jars/carbon-ds-spark.jar

if ! command -v javac >/dev/null 2>&1; then
    echo "NOTE: no 'javac' on PATH (a JDK 17+, e.g. 'apt-get install openjdk-17-jdk-headless'): the carbon-ds Spark" >&2
    echo "      extension is not built; Spark queries over carbondata read every column unless carbon_ds.sql is used." >&2
    exit 0
fi
pyspark_dir=$("$py" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))' 2>/dev/null) || {
    echo "NOTE: $py has no pyspark: the carbon-ds Spark extension is not built." >&2
    exit 0
}
version=$("$py" -c 'import pyspark; print(pyspark.__version__)')
want=$( { echo "$version"; find jvm/src -type f | sort | xargs cat; } | sha256sum | cut -d' ' -f1)
stamp="$out.sha256"
if [ -f "$out" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    exit 0
fi
echo ">> building the carbon-ds Spark extension against PySpark $version"
classes=$(mktemp -d)
trap 'rm -rf "$classes"' EXIT
# --release 17: the oldest JDK Spark 4 runs on
javac --release 17 -nowarn -d "$classes" -cp "$pyspark_dir/jars/*" $(find jvm/src -name '*.java' | sort)
mkdir -p "$(dirname "$out")"
"$py" - "$classes" "$out" jvm/src/main/resources <<'PY'
import os, sys, zipfile
classes, out, resources = sys.argv[1], sys.argv[2], sys.argv[3]
with zipfile.ZipFile(out + ".tmp", "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\nCreated-By: carbon-ds scripts/build-jvm.sh\r\n\r\n")
    for base, _dirs, files in sorted(os.walk(classes)):
        for f in sorted(files):
            full = os.path.join(base, f)
            z.write(full, os.path.relpath(full, classes))
    # resources (META-INF/services: the carbondata provider) as they are
    for base, _dirs, files in sorted(os.walk(resources)):
        for f in sorted(files):
            full = os.path.join(base, f)
            z.write(full, os.path.relpath(full, resources))
os.replace(out + ".tmp", out)
PY
echo "$want" > "$stamp"
