#!/usr/bin/env bash
# Test-only: builds the harness in tests/oracle/java (Apache CarbonData's released SDK, driven by
# CarbonOracle.java) into build/oracle/: Maven resolves the jars from Maven Central (cached in ~/.m2), javac
# compiles against them. Rebuilds only when the pom or the sources change. Nothing of it is in the wheel.
# Exits 3 (saying why) when mvn or javac is missing; the tests then skip, or fail when CI is set.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="$root/tests/oracle/java"
out="${CARBON_DS_ORACLE_DIR:-$root/build/oracle}"
for tool in mvn javac; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "the CarbonData oracle needs '$tool' on PATH (Maven and a JDK 17+)" >&2
        exit 3
    fi
done
want=$( { javac -version 2>&1; cat "$src/pom.xml" "$src"/src/*.java; } | sha256sum | cut -d' ' -f1)
if [ -f "$out/stamp" ] && [ "$(cat "$out/stamp")" = "$want" ]; then
    exit 0
fi
echo ">> building the CarbonData oracle (Apache CarbonData's SDK from Maven Central, cached in ~/.m2)" >&2
mkdir -p "$out"
rm -f "$out/stamp"
mvn -q -B -f "$src/pom.xml" dependency:build-classpath -Dmdep.outputFile="$out/classpath.txt" >&2
rm -rf "$out/classes"
mkdir -p "$out/classes"
javac --release 17 -nowarn -d "$out/classes" -cp "$(cat "$out/classpath.txt")" "$src"/src/*.java
cp "$src/log4j.properties" "$out/classes/"
echo "$want" > "$out/stamp"
