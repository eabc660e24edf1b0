# Sourced by scripts/test-jre.sh and scripts/test-oldest.sh (with $root set): what follows runs on a Java
# runtime without a compiler (scripts/make-jre.sh) and finds no javac. JAVA_HOME and PATH lead to that
# runtime, and a `javac` placed first on PATH fails loudly, so anything that compiled at install or run time
# would fail the tests instead of quietly using this machine's JDK.
jre_dir=$(bash "$root/scripts/make-jre.sh" "$root/build/jre")
no_javac="$root/build/no-javac"
mkdir -p "$no_javac"
printf '#!/bin/sh\necho "javac was called on a JRE-only setup: an installed carbon-ds must need no JDK" >&2\nexit 97\n' \
    > "$no_javac/javac"
chmod +x "$no_javac/javac"
export JAVA_HOME="$jre_dir" PATH="$no_javac:$jre_dir/bin:$PATH"
