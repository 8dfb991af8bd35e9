#!/usr/bin/env bash
# CLI checks of `edgelm bench`, `edgelm synth` and `edgelm inspect --system`: bench's --json
# fields and their consistency (an MoE's bytes a token: its routed experts only), --markdown and
# text output, -t lists, --membw for 1..N threads, EDGELM_ISA reaching the reports, synth's
# --help warning, and bad arguments ending in one "edgelm: ..." line with exit status 1.
# (Writing real-size models is left to test_synth's small presets: a 1B file takes seconds and
# 600 MB.)
# usage: cli_bench.sh EDGELM FIXTURES
set -u
bin=$1 fx=$2
model=$fx/stories260K/stories260K-f32.gguf
. "$(dirname "$0")/lib/cli.sh"

small=(-m "$model" -p 16 -n 8 -r 2 -t 2 --membw-mib 8)
"$bin" bench "${small[@]}" --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
for k in ("pp_tps", "pp_tps_sd", "tg_tps", "tg_tps_sd", "load_ms", "ttft_ms", "peak_rss_mib",
          "model_bytes", "decode_gbps", "membw_gbps", "threads", "isa", "parked_share"):
    assert k in d, k
assert 0 <= d["parked_share"] <= 1, d["parked_share"]
assert d["threads"] == 2 and d["n_prompt"] == 16 and d["n_gen"] == 8 and d["repetitions"] == 2, d
assert d["pp_tps"] > 0 and d["tg_tps"] > 0 and d["ttft_ms"] > 0 and d["membw_gbps"] > 0, d
assert d["pp_tps_sd"] >= 0 and d["tg_tps_sd"] >= 0 and d["peak_rss_mib"] > 1, d
assert 1_000_000 < d["model_bytes"] < 1_200_000, d["model_bytes"]  # the F32 fixture
# decode reads every tensor once per token (the tied embedding is the output)
assert abs(d["decode_gbps"] - d["decode_bytes_per_token"] * d["tg_tps"] / 1e9) < 1e-6 * d["decode_gbps"] + 1e-12, d
assert d["isa"] in ("scalar", "avx2", "avx512", "neon"), d["isa"]
' && ok || fail "bench --json"

# a mixture of experts (synth --tiny qwen3moe: 8 experts, 2 a token): decode reads 2 of each
# stack's 8 experts, so the bytes a token reads leave out 6/8 of every *_exps stack
"$bin" synth --arch qwen3moe --tiny -o "$tmp/moe.gguf" >/dev/null 2>&1 &&
    "$bin" inspect "$tmp/moe.gguf" --json >"$tmp/moe-inspect.json" &&
    "$bin" bench -m "$tmp/moe.gguf" -p 4 -n 2 -r 1 -t 2 --membw-mib 8 --json >"$tmp/moe-bench.json" &&
    python3 - "$tmp/moe-inspect.json" "$tmp/moe-bench.json" <<'EOF' && ok || fail "bench --json: an MoE's bytes a token"
import json, sys
i, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
stacks = [t for t in i["tensors"] if t["name"].endswith("_exps.weight")]
assert len(stacks) == 3 * i["hparams"]["n_layers"] and all(t["shape"][0] == 8 for t in stacks), stacks
untied = 0 if i["hparams"]["tied_output"] else next(t["bytes"] for t in i["tensors"] if t["name"] == "token_embd.weight")
want = i["total_bytes"] - untied - sum(t["bytes"] * 6 // 8 for t in stacks)
assert b["decode_bytes_per_token"] == want, (b["decode_bytes_per_token"], want)
EOF

EDGELM_ISA=scalar "$bin" bench "${small[@]}" --json | python3 -c '
import json, sys
assert json.load(sys.stdin)["isa"] == "scalar"' && ok || fail "EDGELM_ISA=scalar not reported"

md=$("$bin" bench "${small[@]}" --markdown)
echo "$md" | grep -q '^| model | size | isa | threads | pp16 tok/s | tg8 tok/s |' && ok || fail "markdown header: $md"
[ "$(echo "$md" | grep -c '^|')" -eq 3 ] && ok || fail "markdown rows: $md"

txt=$("$bin" bench "${small[@]}")
echo "$txt" | grep -Eq '^pp16 +[0-9.]+ ± [0-9.]+ tok/s' && echo "$txt" | grep -Eq '^tg8 +[0-9.]+ ± ' &&
  echo "$txt" | grep -q 'read bandwidth' && ok || fail "text output: $txt"

"$bin" bench -m "$model" -p 16 -n 8 -r 1 -t 1,2 --membw-mib 8 --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert [e["threads"] for e in d] == [1, 2] and all(e["tg_tps"] > 0 and e["membw_gbps"] > 0 for e in d), d
' && ok || fail "bench -t 1,2 --json"
[ "$("$bin" bench -m "$model" -p 16 -n 8 -r 1 -t 1,2 --membw-mib 8 --markdown | grep -c '^|')" -eq 4 ] &&
  ok || fail "bench -t 1,2 --markdown rows"

"$bin" bench --membw -t 2 --membw-mib 8 --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert [e["threads"] for e in d] == [1, 2] and all(e["membw_gbps"] > 0 for e in d), d' && ok || fail "bench --membw"

"$bin" bench --help | grep -q -- "--membw" && ok || fail "bench --help"
"$bin" synth --help | grep -qi "for speed and memory measurement only" && ok || fail "synth --help warning"
"$bin" synth --help | grep -q "tinyllama-1.1b" && ok || fail "synth --help presets"

EDGELM_ISA=scalar "$bin" inspect --system --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["isa"] == "scalar" and d["forced"] == "scalar" and "scalar" in d["available"], d
assert d["cores"] >= 1 and isinstance(d["features"], list), d' && ok || fail "inspect --system --json"
"$bin" inspect --system | grep -Eq '^kernels +(avx512|avx2|neon|scalar) \(available: ' && ok || fail "inspect --system"
expect_error "inspect --system MODEL" "takes no MODEL" "$bin" inspect --system "$model"

expect_error "bench no model" "bench: -m MODEL is required" "$bin" bench -p 4
expect_error "bench missing file" "no-such.gguf" "$bin" bench -m /nonexistent/no-such.gguf
expect_error "bench bad -p" "invalid value 'abc'" "$bin" bench -m "$model" -p abc
expect_error "bench bad -t" "thread counts 1..512" "$bin" bench -m "$model" -t 1,0
expect_error "bench json+markdown" "choose one" "$bin" bench -m "$model" --json --markdown
expect_error "bench unknown option" "unknown option '--fast'" "$bin" bench --fast
expect_error "synth no args" "required" "$bin" synth
expect_error "synth preset" "unknown preset 'gpt-5'" "$bin" synth --preset gpt-5 --type q4_0 -o "$tmp/x.gguf"
expect_error "synth type" "unknown type 'q3_k_x'" "$bin" synth --preset tinyllama-1.1b --type q3_k_x -o "$tmp/x.gguf"
expect_error "synth output dir" "/nonexistent-dir/" "$bin" synth --preset qwen2-0.5b --type q8_0 -o /nonexistent-dir/x.gguf

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
