#!/usr/bin/env bash
# examples/jni_bridge.c built as the JNI library (cmake/jni.cmake): it must export each entry point
# of org.edgelm.EdgeLm, and every symbol it needs must be defined in it or in a shared library it
# links (so System.loadLibrary cannot fail on an undefined edgelm_ symbol).
# usage: tests/jni_bridge.sh LIBEDGELM_JNI.so   (empty: jni.h was not found; skipped, exit 77)
set -u
lib=${1:-}
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
[ "$fails" -eq 0 ] && echo "jni_bridge: ok ($machine): exports the 4 Java_org_edgelm_EdgeLm_ entry points"
[ "$fails" -eq 0 ]
