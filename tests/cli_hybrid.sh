#!/usr/bin/env bash
# The hybrid families (recurrent layers beside attention) through the tools, on each family's
# synth --tiny model:
# - speculative decoding with its q4_0 copy as the draft: a draft rejected after some tokens rolls
#   the recurrent state back (checkpoint + replay), so the greedy ids equal a plain run's;
# - the server with 2 slots: a second request sharing a prompt prefix with the first reuses the
#   slot's state checkpoint (cached_tokens > 0) and answers exactly what a fresh server answers;
# - quantize: the q4_k_m recipe keeps the convolution kernels in f32 (as llama-quantize does),
#   GPTQ and AWQ calibrate through the recurrent layers (their state carried over each calibration
#   sequence) and GPTQ's KLD against the F32 model is below round-to-nearest's;
# - context shift and the ONNX export are refused in one line.
# Usage: bash tests/cli_hybrid.sh EDGELM_BINARY FIXTURES_DIR
set -u
bin=$1
fix=$2
. "$(dirname "$0")/lib/cli.sh"
. "$(dirname "$0")/lib/serve.sh"

calib=$fix/stories260K/text/calib.txt
valid=$fix/stories260K/text/valid.txt
prompt="Once upon a time there was a little girl who lived in a village near the forest"
for arch in lfm2 granitehybrid; do
    m=$tmp/$arch.gguf
    # the stories260K vocabulary (512 pieces): eval over its text stays quick
    "$bin" synth --arch "$arch" --tiny -o "$m" -s 11 --vocab "$fix/stories260K/stories260K-f32.gguf" \
        >/dev/null 2>"$tmp/err" ||
        { fail "$arch: synth: $(cat "$tmp/err")"; continue; }

    # the server: a shared prefix reuses a checkpoint, and the answer is a fresh server's
    body() { printf '{"prompt": "%s", "max_tokens": 12, "temperature": 0}' "$1"; }
    start_server -m "$m" -np 2 -c 256 -t 2
    status_of POST /v1/completions "$(body "$prompt")" >/dev/null
    status_of POST /v1/completions "$(body "$prompt, and")" >"$tmp/code"
    cp "$tmp/body" "$tmp/reused.json"
    stop_server
    start_server -m "$m" -np 2 -c 256 -t 2
    status_of POST /v1/completions "$(body "$prompt, and")" >/dev/null
    cp "$tmp/body" "$tmp/fresh.json"
    stop_server
    python3 - "$tmp/reused.json" "$tmp/fresh.json" <<'EOF' || fail "$arch: server prefix reuse"
import json, sys
r, f = (json.load(open(p)) for p in sys.argv[1:3])
cached = r["usage"]["prompt_tokens_details"]["cached_tokens"]
same = r["choices"][0]["text"] == f["choices"][0]["text"]
print(f"  cached {cached} of {r['usage']['prompt_tokens']}, same text: {same}", file=sys.stderr)
sys.exit(0 if cached > 0 and same else 1)
EOF

    # quantize: kept kernels, calibrated methods through the recurrent layers
    "$bin" quantize -m "$m" -o "$tmp/km.gguf" --type q4_k_m >/dev/null 2>&1 &&
        "$bin" inspect "$tmp/km.gguf" >"$tmp/inspect" 2>&1 ||
        fail "$arch: quantize q4_k_m: $(tail -1 "$tmp/inspect")"
    grep -E 'shortconv\.conv\.weight|ssm_conv1d' "$tmp/inspect" | grep -vq ' f32 ' &&
        fail "$arch: q4_k_m did not keep the convolution kernels f32"
    for method in rtn gptq awq; do
        "$bin" quantize -m "$m" -o "$tmp/$method.gguf" --type q4_0 --method "$method" \
            --calib "$calib" --calib-samples 16 --seq-len 64 -t 2 >/dev/null 2>"$tmp/err" ||
            fail "$arch: quantize $method: $(tail -1 "$tmp/err")"
    done
    "$bin" eval --ref "$m" -m "$tmp/rtn.gguf" -m "$tmp/gptq.gguf" -f "$valid" -c 128 --json \
        >"$tmp/eval.json" 2>"$tmp/err" || fail "$arch: eval: $(tail -1 "$tmp/err")"
    python3 - "$tmp/eval.json" <<'EOF' || fail "$arch: GPTQ's KLD is not below RTN's"
import json, sys
d = json.load(open(sys.argv[1]))
kld = [m["kld_mean"] for m in d["models"]]
print(f"  KLD rtn {kld[0]:.4f}, gptq {kld[1]:.4f}", file=sys.stderr)
sys.exit(0 if kld[1] < kld[0] else 1)
EOF

    # speculative decoding with the q4_0 copy as the draft: the same ids as without a draft, its
    # drafts accepted in part, so the target's state goes back into its verify batches
    "$bin" run -m "$m" -p "$prompt" -n 24 --temp 0 --ignore-eos -t 2 --json >"$tmp/plain.json" \
        2>"$tmp/err" || fail "$arch: run: $(cat "$tmp/err")"
    "$bin" run -m "$m" --draft "$tmp/rtn.gguf" --draft-max 4 --draft-min-p 0 -p "$prompt" \
        -n 24 --temp 0 --ignore-eos -t 2 --json >"$tmp/spec.json" 2>"$tmp/err" ||
        fail "$arch: run --draft: $(cat "$tmp/err")"
    python3 - "$tmp/plain.json" "$tmp/spec.json" <<'EOF' || fail "$arch: speculative decoding"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
s = b["stats"]["speculative"]
print(f"  draft: {s['accepted']} of {s['drafted']} accepted", file=sys.stderr)
sys.exit(0 if a["generated_ids"] == b["generated_ids"] and 0 < s["accepted"] < s["drafted"] else 1)
EOF

    expect_error "$arch: onnx" "recurrent layers" "$bin" export onnx -m "$m" -o "$tmp/onnx"
    "$bin" run -m "$m" -p "$prompt" -n 40 -c 40 --temp 0 -t 2 >/dev/null 2>"$tmp/err" &&
        fail "$arch: a generation past the context ran"
    grep -q "recurrent layers cannot drop tokens" "$tmp/err" ||
        fail "$arch: context shift: $(cat "$tmp/err")"
done

[ "$failed" -eq 0 ] && echo "cli_hybrid: all passed"
exit $((failed > 0))
