#!/usr/bin/env bash
# examples/jni_bridge.c built as the JNI library (cmake/jni.cmake): it must export each entry point
# of org.edgelm.EdgeLm, and every symbol it needs must be defined in it or in a shared library it
# links (so System.loadLibrary cannot fail on an undefined edgelm_ symbol). Where a JDK can run the
# library (same architecture as this machine, not a sanitizer build, javac and java present), a JVM
# then drives it (tests/jni/JniBridgeTest.java): a chat turn streamed through the listener, a turn
# the listener stops, and a missing file's exception.
# usage: tests/jni_bridge.sh LIBEDGELM_JNI.so FIXTURES   (empty LIB: no jni.h; skipped, exit 77)
set -u
lib=${1:-} fixtures=${2:-}
if [ -z "$lib" ]; then
  echo "jni_bridge: SKIPPED: no jni.h found at configure time (apt-get install default-jdk-headless)"
  exit 77
fi
command -v readelf >/dev/null 2>&1 || { echo "jni_bridge: SKIPPED: readelf missing"; exit 77; }
syms=$(readelf --dyn-syms -W "$lib") || { echo "jni_bridge: FAIL: readelf cannot read $lib"; exit 1; }
fails=0
for fn in nativeLoad nativeNewChat nativeChat nativeFree; do
  if ! awk '$7 != "UND" && $5 == "GLOBAL" && $4 == "FUNC"' <<<"$syms" | grep -qw "Java_org_edgelm_EdgeLm_$fn"; then
    echo "jni_bridge: FAIL: $lib does not export Java_org_edgelm_EdgeLm_$fn"
    fails=$((fails + 1))
  fi
done
undef=$(awk '$7 == "UND" && $8 ~ /^(edgelm|elm)_/ {print $8}' <<<"$syms")
if [ -n "$undef" ]; then
  echo "jni_bridge: FAIL: $lib leaves edgelm symbols undefined: $undef"
  fails=$((fails + 1))
fi
machine=$(readelf -h "$lib" | awk -F: '/Machine/ {gsub(/^ +/, "", $2); print $2}')
[ "$fails" -eq 0 ] || exit 1
echo "jni_bridge: ok ($machine): exports the 4 Java_org_edgelm_EdgeLm_ entry points"

host=$(uname -m)
case "$machine" in *X86-64*) arch=x86_64 ;; *AArch64*) arch=aarch64 ;; *) arch=other ;; esac
if [ "$arch" != "$host" ]; then
  echo "jni_bridge: no JVM run: a $machine library on $host"; exit 0
fi
if readelf -d "$lib" | grep -Eq 'lib(a|ub|t)san'; then
  echo "jni_bridge: no JVM run: a sanitizer build (its runtime must load before the JVM's)"; exit 0
fi
if ! command -v javac >/dev/null 2>&1 || ! command -v java >/dev/null 2>&1; then
  echo "jni_bridge: no JVM run: javac/java missing (apt-get install default-jdk-headless)"; exit 0
fi
src=$(cd "$(dirname "$0")/jni" && pwd)
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
javac -d "$tmp" "$src/org/edgelm/EdgeLm.java" "$src/JniBridgeTest.java" ||
  { echo "jni_bridge: FAIL: javac"; exit 1; }
java -Xss8m -cp "$tmp" -Djava.library.path="$(dirname "$lib")" JniBridgeTest \
  "$fixtures/stories260K/stories260K-f32.gguf" || { echo "jni_bridge: FAIL: the JVM run"; exit 1; }
