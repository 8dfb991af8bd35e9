#!/usr/bin/env bash
# Decode speed held to a JSON schema against free text (issue 39: at most 10% slower), on a
# TinyLlama-1.1B-shaped model of random weights (`edgelm synth --preset tinyllama-1.1b --type q4_k`,
# made here when missing; its 32000-token vocabulary is synthetic, pieces of 7-10 bytes). Two
# schemas: `person` (three required fields, an enum, a bounded integer and a string of at most
# 10 characters: mostly structure, where the random model's first draw is refused and the whole
# vocabulary is masked) and `story` (one string of up to 3000 characters: the first draw is
# nearly always allowed, one token checked). Rounds alternate free / person / story at the same
# seed; each row is the mean of the rounds' decode tok/s as `edgelm run` prints it. Prints the
# CPU, the ISA and the load first, then one Markdown table. A benchmark, not a test.
# Usage: bash bench/constrained_decode.sh [EDGELM_BINARY] [THREADS] [ROUNDS]
set -euo pipefail
bin=${1:-build/edgelm}
threads=${2:-$(nproc)}
rounds=${3:-5}
out=build/bench-constrained
mkdir -p "$out"
model=$out/tinyllama-q4_k.gguf
[ -f "$model" ] || "$bin" synth --preset tinyllama-1.1b --type q4_k -o "$model" >/dev/null
cat >"$out/person.json" <<'JSON'
{"type": "object", "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 10},
 "age": {"type": "integer", "minimum": 1, "maximum": 99}, "kind": {"enum": ["cat", "dog"]}},
 "required": ["name", "age", "kind"], "additionalProperties": false}
JSON
printf '{"type": "object", "properties": {"story": {"type": "string", "maxLength": 3000}}, "required": ["story"]}' >"$out/story.json"

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $threads threads"
echo "ISA: EDGELM_ISA=${EDGELM_ISA:-(best)}; CPU has $(grep -qw avx512f /proc/cpuinfo && echo AVX-512 || echo AVX2)"
echo "load: $(uptime | sed 's/.*load average: //')"
declare -A sum n tok
for r in $(seq "$rounds"); do
    for c in free person story; do
        args=()
        [ "$c" = free ] || args=(--json-schema "$out/$c.json")
        line=$("$bin" run -m "$model" -p "Lily had a pet" -n 128 --temp 0.8 -s "$r" -t "$threads" \
            "${args[@]}" 2>&1 >/dev/null | grep -o 'generated [0-9]* tokens, [0-9.]* tok/s')
        sum[$c]=$(python3 -c "print(${sum[$c]:-0} + $(echo "$line" | awk '{print $4}'))")
        tok[$c]=$(( ${tok[$c]:-0} + $(echo "$line" | awk '{print $2}') ))
        n[$c]=$(( ${n[$c]:-0} + 1 ))
    done
done
echo
echo "| output | tokens per reply | decode tok/s | vs free text |"
echo "|---|---|---|---|"
free=$(python3 -c "print(${sum[free]} / ${n[free]})")
for c in free person story; do
    python3 -c "
m = ${sum[$c]} / ${n[$c]}
print('| %s | %.0f | %.1f | %+.1f%% |' % ('$c', ${tok[$c]} / ${n[$c]}, m, 100 * (m / $free - 1)))"
done
