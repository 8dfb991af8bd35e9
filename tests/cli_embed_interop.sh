#!/usr/bin/env bash
# Embeddings against llama.cpp and a real client:
#  - llama.cpp (node-llama-cpp@3.21.1's prebuilt CPU library, scripts/node-llama.sh;
#    tests/interop/embed.mjs) and `edgelm embed` on synth's tiny models with stories260K's
#    vocabulary: gemma-embedding (bidirectional attention with symmetric windows of 16, mean
#    pooling, Dense layers), qwen3 with last-token pooling (its EOS appended) and llama with mean
#    pooling, from the GGUF and (but llama) from the --hf copy, on 3 prompts (the third longer
#    than the window): the same token ids, cosine >= 0.9999 (INTEROP_VERBOSE=1 prints each);
#  - the official OpenAI Node client (scripts/npm-clients.sh; tests/lib/serve_embeddings.cjs)
#    against `edgelm serve` on the gemma-embedding model: its default base64 decoded to `edgelm
#    embed`'s vectors, floats, arrays, dimensions, a 400.
# llama.cpp's vectors are kept in $npm_dir/embed-cache under a hash of what they depend on (the
# script, the package, the model's bytes, the prompts, the CPU's flags), so the clang and ASan
# runs of make test find the release run's. Skipped (exit 77, one line) when node is missing or
# npm cannot reach the registry.
# usage: cli_embed_interop.sh EDGELM FIXTURES
set -u
bin=$1 fx=$2
. "$(dirname "$0")/lib/cli.sh"
. "$(dirname "$0")/lib/serve.sh"
require_node_llama

# embed_ref MODEL.gguf PROMPT...: llama.cpp's embeddings (embed.mjs's JSON), cached
embed_ref() {
    local pkg=$npm_dir/node_modules/node-llama-cpp dir=$npm_dir/embed-cache key
    key=$({ sha256sum tests/interop/embed.mjs "$pkg/package.json" "$1" | cut -d' ' -f1
        printf '%s\0' "${@:2}"; grep -m1 '^flags' /proc/cpuinfo; } | sha256sum | cut -c1-40) || return 1
    if [ ! -s "$dir/$key.json" ]; then
        mkdir -p "$dir" && node tests/interop/embed.mjs "$pkg" "$@" >"$dir/$key.json.$$" &&
            mv "$dir/$key.json.$$" "$dir/$key.json" || { rm -f "$dir/$key.json.$$"; return 1; }
    fi
    cat "$dir/$key.json"
}

st=$fx/stories260K/stories260K-f32.gguf
prompts=("Once upon a time" "The capital of France is"
    "Once upon a time there was a little girl who lived in a village near the forest. Whenever she went out, she wore a red cloak.")
: >"$tmp/pairs"
for spec in gemma-embedding:mean qwen3:last llama:mean; do
    arch=${spec%%:*} pool=${spec##*:}
    gguf=$tmp/$arch.gguf models=("$gguf" "$tmp/$arch-hf") hf=(--hf "$tmp/$arch-hf")
    [ "$arch" = llama ] && models=("$gguf") hf=()
    "$bin" synth --arch "$arch" --tiny --pooling "$pool" --vocab "$st" -o "$gguf" "${hf[@]}" -s 11 \
        >/dev/null 2>"$tmp/err" || { fail "$arch: synth: $(cat "$tmp/err")"; continue; }
    embed_ref "$gguf" "${prompts[@]}" >"$tmp/$arch.ref.json" 2>"$tmp/err" ||
        { fail "$arch: llama.cpp: $(tail -3 "$tmp/err")"; continue; }
    for model in "${models[@]}"; do
        for i in 0 1 2; do
            out=$tmp/$(basename "$model")-$i.json
            "$bin" embed -m "$model" -p "${prompts[$i]}" --json -t 2 >"$out" 2>"$tmp/err" &&
                echo "$tmp/$arch.ref.json $i $out $pool" >>"$tmp/pairs" ||
                fail "$arch: embed $model: $(cat "$tmp/err")"
        done
    done
done
# each edgelm vector against llama.cpp's: the same tokens, cosine >= 0.9999
n_bad=$(python3 - "$tmp/pairs" "${INTEROP_VERBOSE:-0}" <<'EOF'
import json, math, os, sys
bad = 0
for line in open(sys.argv[1]):
    ref_path, i, out, pool = line.split()
    ref = json.load(open(ref_path))[int(i)]
    got = json.load(open(out))
    a, b = got["embedding"], ref["embedding"]
    cos = sum(x * y for x, y in zip(a, b)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))
    name = f"{os.path.basename(out)[:-5]} (prompt {i})"
    if sys.argv[2] == "1":
        print(f"{name}: cosine {cos:.8f}", file=sys.stderr)
    if got["tokens"] != ref["prompt_ids"] or len(a) != len(b) or got["pooling"] != pool or not cos >= 0.9999:
        bad += 1
        print(f"FAIL: {name}: cosine {cos:.8f} with llama.cpp's (want >= 0.9999), tokens "
              f"{got['tokens']} vs {ref['prompt_ids']}, pooling {got['pooling']}", file=sys.stderr)
print(bad)
EOF
)
n_all=$(wc -l <"$tmp/pairs")
[ "$n_all" -eq 15 ] && [ "$n_bad" = 0 ] && ok || fail "$n_bad of $n_all embeddings differ from llama.cpp's"

# --- the OpenAI client
clients=$(bash scripts/npm-clients.sh 2>"$tmp/npm.err")
rc=$?
[ "$rc" -eq 2 ] && { echo "cli_embed_interop: openai client not installed: $(cat "$tmp/npm.err")" >&2; }
[ "$rc" -eq 1 ] && fail "openai install: $(cat "$tmp/npm.err")"
if [ "$rc" -eq 0 ] && [ -f "$tmp/gemma-embedding.gguf" ]; then
    for i in 0 1; do
        "$bin" embed -m "$tmp/gemma-embedding.gguf" -p "${prompts[$i]}" --json >"$tmp/want$i.json" 2>/dev/null
    done
    python3 - "${prompts[0]}" "${prompts[1]}" "$tmp/want0.json" "$tmp/want1.json" >"$tmp/want.json" <<'EOF'
import json, sys
print(json.dumps({sys.argv[1]: json.load(open(sys.argv[3]))["embedding"],
                  sys.argv[2]: json.load(open(sys.argv[4]))["embedding"]}))
EOF
    start_server -m "$tmp/gemma-embedding.gguf" -t 1 -c 128
    node tests/lib/serve_embeddings.cjs "$clients" "$url" "$tmp/want.json" && ok || fail "openai client checks"
    stop_server TERM
fi
echo "cli_embed_interop: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
