#!/usr/bin/env bash
# Installs llama.cpp's prebuilt CPU library for Node (node-llama-cpp, pinned) into build/npm once,
# for the interop tests that load edgelm's GGUF files in the reference runtime. Safe to call from
# several tests at once (flock). Prints the install folder; exit 2 when the npm registry cannot be
# reached (the tests then skip with one clear line), 1 on any other failure.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${EDGELM_NPM_DIR:-$root/build/npm}
mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9
if [ ! -f "$dir/node_modules/node-llama-cpp/package.json" ]; then
  command -v npm >/dev/null 2>&1 || { echo "npm not found" >&2; exit 2; }
  if ! npm view node-llama-cpp@3.21.1 version >/dev/null 2>&1; then
    echo "npm registry unreachable" >&2
    exit 2
  fi
  (cd "$dir" && npm init -y >/dev/null 2>&1 && npm i -E --no-audit --no-fund node-llama-cpp@3.21.1 >/dev/null 2>&1) ||
    { echo "npm install node-llama-cpp@3.21.1 failed" >&2; exit 1; }
fi
# On CPUs with AVX512-FP16 (Sapphire Rapids and later) the library's best CPU variant adds F16
# dot products (the KV cache's attention scores) in half precision, an arithmetic of its own that
# edgelm's --ggml-rounding does not emulate: logits drift by 1e-2 over a few positions. The
# interop tests compare kernels and encoders, so they run the next variant (AVX-512 with float32
# sums, as on every other x86 CPU); the hidden one is kept beside it.
bins=$dir/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
if grep -qw avx512_fp16 /proc/cpuinfo 2>/dev/null && [ -f "$bins/libggml-cpu-sapphirerapids.so" ]; then
  mkdir -p "$bins/hidden-fp16" && mv "$bins/libggml-cpu-sapphirerapids.so" "$bins/hidden-fp16/" ||
    { echo "cannot set aside $bins/libggml-cpu-sapphirerapids.so" >&2; exit 1; }
fi
echo "$dir"
