#!/usr/bin/env bash
# Writes the i-quant references from llama.cpp's own tools (node-llama-cpp 3.21.1's llama.cpp, built
# outside the repo; their paths are arguments), for the sub-4-bit types edgelm reads:
#   tests/data/iquant/TYPE.gguf: llama-quantize's file of the wide256 model in TYPE, cut by
#     tests/lib/iquant_cut.py to blk.0.attn_k.weight and the first 128 rows of
#     blk.1.ffn_down.weight (test_iquant_kernels, cli_iquant, cli_iquant_write);
#   tests/data/iquant/iq3_xxs-embd.gguf: the first 128 rows of token_embd.weight and output.weight
#     of the IQ3_XXS file, which llama-quantize encodes without importances (cli_iquant_write);
#   tests/data/iquant/iq3_s-noimatrix.gguf: the IQ3_S file's cut, made without --imatrix
#     (cli_iquant_write);
#   tests/data/iquant_llamacpp.json: for each whole file, its llama-quantize arguments, bytes, and
#     llama-perplexity -c 256 on stories260K's valid.txt: PPL and mean KLD against the F32 model.
# Each file is `llama-quantize --pure --imatrix` with wide256's importance matrix. The IQ1_S and
# IQ2 types also need --token-embedding-type q8_0 --output-tensor-type q8_0: llama-quantize aborts
# when an IQ1/IQ2 tensor (token_embd, output) has no importance data. IQ2_S tensors come from the
# IQ2_M file type (llama-quantize's IQ2_S file type writes IQ2_XS tensors).
# Usage: bash scripts/iquant_reference.sh LLAMA_QUANTIZE LLAMA_PERPLEXITY FIXTURES_DIR
set -eu
lq=$1 lp=$2 fix=$3
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
w=$fix/wide256
text=$fix/stories260K/text/valid.txt
mkdir -p "$root/tests/data/iquant"
# perplexity LOG PATTERN ARGS...: llama-perplexity ARGS into LOG, again (3 tries) while LOG lacks
# PATTERN: llama.cpp's logging thread can lose the last lines at exit on a busy machine
perplexity() {
    local log=$1 pattern=$2 try
    shift 2
    for try in 1 2 3; do
        "$lp" "$@" >"$log" 2>&1
        grep -q "$pattern" "$log" && return 0
    done
    echo "$log: no '$pattern' in llama-perplexity's output" >&2
    exit 1
}
perplexity "$tmp/f32.log" 'Final estimate' -m "$w/wide-f32.gguf" -f "$text" -c 256 -b 256 -t 2 \
    --kl-divergence-base "$tmp/base.kld"
get() { grep -o "$2 *: *[0-9.]*" "$1" | head -1 | grep -o '[0-9.]*$'; }
for t in iq2_xxs iq2_xs iq2_s iq3_xxs iq3_s iq1_s iq1_m tq1_0 tq2_0; do
    ftype=${t^^}
    [ "$t" = iq2_s ] && ftype=IQ2_M
    extra=()
    case $t in iq1_s | iq2_*) extra=(--token-embedding-type q8_0 --output-tensor-type q8_0) ;; esac
    args=(--pure "${extra[@]}" --imatrix wide256/reference-quants/llamacpp-imatrix-calib.gguf
          wide256/wide-f32.gguf OUT "$ftype" 2)
    (cd "$fix" && "$lq" "${args[@]/OUT/$tmp/$t.gguf}") >"$tmp/$t.qlog" 2>&1
    python3 "$root/tests/lib/iquant_cut.py" "$tmp/$t.gguf" "$root/tests/data/iquant/$t.gguf" 128 \
        blk.0.attn_k.weight blk.1.ffn_down.weight
    [ "$t" = iq3_xxs ] && python3 "$root/tests/lib/iquant_cut.py" "$tmp/$t.gguf" \
        "$root/tests/data/iquant/iq3_xxs-embd.gguf" 128 token_embd.weight output.weight
    perplexity "$tmp/$t.log" 'Mean    KLD' -m "$tmp/$t.gguf" -f "$text" -c 256 -b 256 -t 2 \
        --kl-divergence-base "$tmp/base.kld" --kl-divergence
    printf '{"llama_quantize": "%s", "file_bytes": %s, "ppl": %s, "kld_mean": %s}\n' \
        "${args[*]}" "$(stat -c %s "$tmp/$t.gguf")" "$(get "$tmp/$t.log" 'Mean PPL(Q)')" \
        "$(get "$tmp/$t.log" 'Mean    KLD')" >"$tmp/$t.json"
done
(cd "$fix" && "$lq" --pure wide256/wide-f32.gguf "$tmp/iq3_s-noimatrix.gguf" IQ3_S 2) \
    >"$tmp/iq3_s-noimatrix.qlog" 2>&1
python3 "$root/tests/lib/iquant_cut.py" "$tmp/iq3_s-noimatrix.gguf" \
    "$root/tests/data/iquant/iq3_s-noimatrix.gguf" 128 blk.0.attn_k.weight blk.1.ffn_down.weight
base=$(grep -o 'Final estimate: PPL = [0-9.]*' "$tmp/f32.log" | grep -o '[0-9.]*$')
python3 - "$tmp" "$base" >"$root/tests/data/iquant_llamacpp.json" <<'PY'
import glob, json, os, sys
tmp, base = sys.argv[1], float(sys.argv[2])
files = {os.path.basename(p)[:-5]: json.load(open(p)) for p in sorted(glob.glob(f"{tmp}/*.json"))}
json.dump({"tool": "llama.cpp (node-llama-cpp 3.21.1): llama-quantize, llama-perplexity "
           "-c 256 -b 256 --kl-divergence on stories260K/text/valid.txt",
           "model": "wide256/wide-f32.gguf", "base_ppl_f32": base, "files": files},
          sys.stdout, indent=1, sort_keys=True)
print()
PY
