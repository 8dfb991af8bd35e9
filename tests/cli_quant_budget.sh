#!/usr/bin/env bash
# quantize's size budget (src/quant/budget.c) on stories260K, calibrated on its calib.txt:
# - `--method gptq --target-size` at the file size of llama.cpp's imatrix Q4_K_M
#   (golden/quant_reference.json, 304,320 bytes): the budget is the file's size less this file's
#   own header and metadata (measured on a q8_0 file of the model) and 32 bytes of alignment per
#   tensor; the tensor data are within it, the file within llama.cpp's, the types mixed, every
#   chosen tensor reported with its predicted cost, and the mean KLD on valid.txt (n_ctx 256) at
#   most 0.0103, 0.65x llama.cpp's 0.0158 (issue 40's bar). A sanitizer build measures on a few
#   short samples and leaves out the KLD (numerics, not memory);
# - --target-bpw 7 with three candidates: 7 bits per weight or just under, types mixed, a
#   --tensor-type override kept;
# - bad input gets one line and no file: a budget below the smallest file the candidates give, no
#   --calib, --target-bpw above F16's 16, an unknown candidate.
# Usage: bash tests/cli_quant_budget.sh EDGELM_BINARY FIXTURES_DIR
set -u
bin=$1 fix=$2
. "$(dirname "$0")/lib/cli.sh"
. "$(dirname "$0")/lib/budget.sh"
s=$fix/stories260K golden=$fix/stories260K/golden/quant_reference.json
f32=$s/stories260K-f32.gguf
[ -f "$f32" ] && [ -f "$golden" ] || skip "the stories260K fixtures are missing"
calib=(--calib "$s/text/calib.txt")
$sanitized && calib+=(--calib-samples 8 --seq-len 64)

ref_bytes=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["files"]["q4_k_m-imat"]["file_bytes"])' "$golden")
target=$(budget_target "$bin" "$f32" "$ref_bytes") || fail "the budget's target"

if "$bin" quantize -m "$f32" -o "$tmp/b.gguf" --method gptq --target-size "$target" "${calib[@]}" \
    -t 2 --json >"$tmp/b.json" 2>"$tmp/err"; then
    python3 - "$tmp/b.json" "$tmp/b.gguf" "$target" "$ref_bytes" <<'PY' && ok || fail "the budget's file"
import json, os, sys
d, path = json.load(open(sys.argv[1])), sys.argv[2]
target, ref = int(sys.argv[3]), int(sys.argv[4])
assert d["tensor_bytes"] <= target, (d["tensor_bytes"], target)
assert os.path.getsize(path) == d["file_bytes"] <= ref, (os.path.getsize(path), ref)
chosen = [t for t in d["tensors"] if "predicted_cost" in t]
# the embedding, the output and the 7 linears of each of 5 blocks but ffn_down (rows of 172: F16)
assert len(chosen) == 2 + 5 * 6, len(chosen)
assert all(t["predicted_cost"] >= 0 and t["reason"].startswith("size budget") for t in chosen)
assert len({t["type"] for t in chosen}) >= 2, {t["type"] for t in chosen}
print(f"budget: {d['tensor_bytes']} bytes of tensor data (target {target}), file {d['file_bytes']}")
PY
else
    fail "quantize --target-size: $(tail -1 "$tmp/err")"
fi

if $sanitized; then
    echo "cli_quant_budget: the KLD bar not measured in a sanitizer build"
elif [ -f "$tmp/b.gguf" ]; then
    "$bin" eval --ref "$f32" -m "$tmp/b.gguf" -f "$s/text/valid.txt" -c 256 -t 2 --json \
        >"$tmp/eval.json" 2>"$tmp/err" || fail "eval: $(tail -1 "$tmp/err")"
    python3 - "$tmp/eval.json" <<'PY' && ok || fail "the budget's KLD is above the bar"
import json, sys
kld = json.load(open(sys.argv[1]))["models"][0]["kld_mean"]
print(f"budget (gptq): mean KLD {kld:.5f} (bar 0.0103)")
assert kld <= 0.0103, kld
PY
fi

# --target-bpw: bits per weight of the whole file's tensors, on a few short samples (its sizes,
# not its accuracy)
if "$bin" quantize -m "$f32" -o "$tmp/bpw.gguf" --target-bpw 7 --candidates q4_0,q5_0,q8_0 \
    --tensor-type 'blk.0.attn_q=q4_1' --calib "$s/text/calib.txt" --calib-samples 4 \
    --seq-len 32 --json >"$tmp/bpw.json" 2>"$tmp/err"; then
    python3 - "$tmp/bpw.json" <<'PY' && ok || fail "--target-bpw 7"
import json, sys
d = json.load(open(sys.argv[1]))
assert 6.9 < d["bits_per_weight"] <= 7, d["bits_per_weight"]
chosen = {t["type"] for t in d["tensors"] if "predicted_cost" in t}
assert chosen <= {"q4_0", "q5_0", "q8_0"} and len(chosen) >= 2, chosen
q = next(t for t in d["tensors"] if t["name"] == "blk.0.attn_q.weight")
assert q["type"] == "q4_1" and "predicted_cost" not in q, q
PY
else
    fail "quantize --target-bpw: $(tail -1 "$tmp/err")"
fi

expect_error "budget too small" "below the smallest these candidates give" \
    "$bin" quantize -m "$f32" -o "$tmp/small.gguf" --target-size 100000 "${calib[@]}"
[ ! -e "$tmp/small.gguf" ] && ok || fail "a refused budget left a file"
expect_error "budget without --calib" "give --calib FILE" \
    "$bin" quantize -m "$f32" -o "$tmp/small.gguf" --target-bpw 5
expect_error "bpw above f16" "outside (0, 16]" \
    "$bin" quantize -m "$f32" -o "$tmp/small.gguf" --target-bpw 17 "${calib[@]}"
expect_error "unknown candidate" "unknown type 'q9_9'" \
    "$bin" quantize -m "$f32" -o "$tmp/small.gguf" --target-bpw 6 --candidates q4_0,q9_9 "${calib[@]}"
[ ! -e "$tmp/small.gguf" ] && ok || fail "a refused run left a file"

echo "cli_quant_budget: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
