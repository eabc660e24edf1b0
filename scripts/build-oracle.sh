#!/usr/bin/env bash
# Test-only: builds the harness in tests/oracle/java (Apache CarbonData's released SDK, driven by
# CarbonOracle.java) into build/oracle/, or with the argument "java1x" the one in tests/oracle/java1x
# (CarbonData 1.6.1's SDK, which cannot share a classpath with 2.3.0) into build/oracle-java1x/: Maven resolves the jars from Maven Central (cached in ~/.m2), javac
# compiles against them. Rebuilds only when the pom or the sources change. Nothing of it is in the wheel.
# Without mvn on PATH it fetches Apache Maven itself from Maven Central (cached under ~/.m2). Exits 3 (saying
# why) when javac is missing or Maven cannot be had; the tests then skip, or fail when CI is set.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
module="${1:-java}"
src="$root/tests/oracle/$module"
if [ "$module" = java ]; then
    out="${CARBON_DS_ORACLE_DIR:-$root/build/oracle}"
else
    out="${CARBON_DS_ORACLE_DIR:-$root/build/oracle}-$module"
fi
if [ ! -f "$src/pom.xml" ]; then
    echo "no harness in $src" >&2
    exit 2
fi
maven_version=3.9.9
if ! command -v javac >/dev/null 2>&1; then
    echo "the CarbonData oracle needs 'javac' on PATH (a JDK 17+)" >&2
    exit 3
fi
want=$( { javac -version 2>&1; cat "$src/pom.xml" "$src/log4j.properties" "$src"/src/*.java; } | sha256sum | cut -d' ' -f1)
if [ -f "$out/stamp" ] && [ "$(cat "$out/stamp")" = "$want" ]; then
    exit 0
fi

# mvn from PATH, else Apache Maven's binary distribution from Maven Central, checked against its published SHA-512
fetch() {  # url file
    if command -v curl >/dev/null 2>&1; then curl -fsSL --retry 3 -o "$2" "$1"
    else python3 -c 'import sys, urllib.request; urllib.request.urlretrieve(sys.argv[1], sys.argv[2])' "$1" "$2"; fi
}
mvn_cmd=mvn
if ! command -v mvn >/dev/null 2>&1; then
    tools="${CARBON_DS_TOOLS:-$HOME/.m2/carbon-ds-tools}"
    mvn_cmd="$tools/apache-maven-$maven_version/bin/mvn"
    if [ ! -x "$mvn_cmd" ]; then
        echo ">> no mvn on PATH: fetching Apache Maven $maven_version from Maven Central into $tools" >&2
        mkdir -p "$tools"
        base="https://repo.maven.apache.org/maven2/org/apache/maven/apache-maven/$maven_version"
        tarball="$tools/apache-maven-$maven_version-bin.tar.gz"
        if ! fetch "$base/apache-maven-$maven_version-bin.tar.gz" "$tarball" ||
           ! fetch "$base/apache-maven-$maven_version-bin.tar.gz.sha512" "$tarball.sha512"; then
            echo "the CarbonData oracle needs Maven: no 'mvn' on PATH and $base is out of reach" >&2
            exit 3
        fi
        if [ "$(sha512sum "$tarball" | cut -d' ' -f1)" != "$(cut -d' ' -f1 < "$tarball.sha512")" ]; then
            echo "the Apache Maven download does not match its SHA-512 ($base)" >&2
            exit 3
        fi
        tar -xzf "$tarball" -C "$tools"
        rm -f "$tarball" "$tarball.sha512"
    fi
fi

echo ">> building the CarbonData oracle (Apache CarbonData's SDK from Maven Central, cached in ~/.m2)" >&2
mkdir -p "$out"
rm -f "$out/stamp"
"$mvn_cmd" -q -B -f "$src/pom.xml" dependency:build-classpath -Dmdep.outputFile="$out/classpath.txt" >&2
rm -rf "$out/classes"
mkdir -p "$out/classes"
javac --release 17 -nowarn -d "$out/classes" -cp "$(cat "$out/classpath.txt")" "$src"/src/*.java
cp "$src/log4j.properties" "$out/classes/"
echo "$want" > "$out/stamp"
