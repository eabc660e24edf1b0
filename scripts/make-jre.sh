#!/usr/bin/env bash
# A Java runtime without a compiler, made from this machine's JDK by jlink: every module but the JDK's tools
# (jdk.compiler with javac among them), no bin/javac. scripts/test-jre.sh runs installed wheels on it, as a
# user's machine with a JRE and no JDK would. Prints the runtime's folder (kept, rebuilt when the JDK changes).
set -euo pipefail
out="${1:?usage: make-jre.sh OUT_DIR}"
java_bin="${JAVA_HOME:+$JAVA_HOME/bin/}java"
stamp="$out/.made-from"
from=$("$java_bin" -XshowSettings:properties -version 2>&1 | grep -E 'java\.(home|runtime\.version) =' | tr -d ' ')
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$from" ]; then
    echo "$out"
    exit 0
fi
jlink_bin="${JAVA_HOME:+$JAVA_HOME/bin/}jlink"
if ! command -v "$jlink_bin" >/dev/null; then
    echo "make-jre.sh needs a JDK's jlink (JDK 17+) to make the compiler-free runtime" >&2
    exit 1
fi
# the tools' modules (and what needs them): a runtime without them has no javac and no jdk.compiler
tools='^(jdk\.(compiler|javadoc|jshell|jdeps|jlink|jpackage|jartool|jconsole|jdi|jdwp\.agent|jstatd|jcmd|attach|editpad|hotspot\.agent|internal\.(ed|le|opt|jvmstat)))$'
modules=$("$java_bin" --list-modules | sed 's/@.*//' | grep -Ev "$tools" | paste -sd, -)
rm -rf "$out"
"$jlink_bin" --add-modules "$modules" --output "$out" --no-header-files --no-man-pages --strip-debug >&2 2>/dev/null
if [ -e "$out/bin/javac" ] || "$out/bin/java" --list-modules | grep -q '^jdk\.compiler@'; then
    echo "the runtime made in $out still holds the compiler" >&2
    exit 1
fi
echo "$from" > "$stamp"
echo "$out"
