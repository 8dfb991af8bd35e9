#!/usr/bin/env bash
# Installs the Debian packages the build needs when they are missing (as root), or says exactly what to install.
set -eu
need=()
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v cc >/dev/null 2>&1 || need+=(gcc)
command -v clang >/dev/null 2>&1 || need+=(clang)  # `make test` builds the tree with clang too
command -v readelf >/dev/null 2>&1 || need+=(binutils)  # the JNI bridge test reads its symbols
# jni.h for the JNI bridge (cmake/jni.cmake): any JDK's include folder will do
ls /usr/lib/jvm/*/include/jni.h 2>/dev/null | grep -q . || need+=(default-jdk-headless)
command -v python3 >/dev/null 2>&1 || need+=(python3)  # JSON checks in the CLI tests and the demo table
/usr/bin/python3 -c 'import ensurepip' >/dev/null 2>&1 || need+=(python3-venv)  # the Python package's test venv
[ -f /usr/include/cjson/cJSON.h ] || need+=(libcjson-dev)
[ -f /usr/include/pcre2.h ] || need+=(libpcre2-dev)  # byte-level BPE pre-tokenizer regexes
[ -f /usr/include/lapacke.h ] || need+=(liblapacke-dev)  # GPTQ's Cholesky factorizations
command -v clang >/dev/null 2>&1 || need+=(clang)  # libFuzzer harnesses (scripts/fuzz.sh)
ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a 2>/dev/null | grep -q . ||
  [ "$(uname -m)" != x86_64 ] || need+=(libclang-rt-14-dev)  # libFuzzer's runtime
[ -f /usr/include/microhttpd.h ] || need+=(libmicrohttpd-dev)  # HTTP for edgelm serve
[ -f /usr/include/sqlite3.h ] || need+=(libsqlite3-dev)  # document indexes (FTS5): edgelm index, search
ls /usr/lib/*/libopenblas.so /usr/lib/libopenblas.so 2>/dev/null | grep -q . || need+=(libopenblas-dev)  # CBLAS
command -v protoc-c >/dev/null 2>&1 || need+=(protobuf-c-compiler)  # ONNX export: C from onnx.proto
[ -f /usr/include/protobuf-c/protobuf-c.h ] || need+=(libprotobuf-c-dev)
[ -f /usr/include/onnx/onnx.proto ] || need+=(libonnx-dev)
/usr/bin/python3 -c 'import onnx' >/dev/null 2>&1 || need+=(python3-onnx)  # the export tests' graph checker
/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1 || need+=(python3-numpy)  # the Python package's numpy path
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "edgelm: installing ${need[*]} with apt-get" >&2
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
else
  echo "edgelm: missing packages; run: sudo apt-get install -y ${need[*]}" >&2
  exit 1
fi
