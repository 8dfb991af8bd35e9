#!/usr/bin/env bash
# CLI test: `edgelm quantize --method gptq` interrupted (SIGINT as Ctrl-C sends, SIGTERM and
# SIGKILL as kill sends) while it runs leaves no output file and no temporary one in the output's
# folder: only the checkpoint `--resume` goes on from (tests/cli_quant_resume.sh).
# Usage: bash tests/cli_quant_interrupt.sh EDGELM_BINARY FIXTURES_DIR
set -u
bin=$1
fix=$2
f32=$fix/stories260K/stories260K-f32.gguf
. "$(dirname "$0")/lib/cli.sh"
# job control: without it a background command starts with SIGINT ignored
set -m

for sig in INT TERM KILL; do
    mkdir -p "$tmp/$sig"
    "$bin" quantize -m "$f32" --type q4_0 --method gptq --calib "$fix/stories260K/text/calib.txt" \
        -t 1 -o "$tmp/$sig/out.gguf" 2>"$tmp/$sig.err" &
    pid=$!
    # interrupted once it reports its first block (it is then in the calibrated run)
    if ! running_at "$pid" "$tmp/$sig.err" "blk"; then
        fail "SIG$sig: quantize ended before it could be interrupted: $(cat "$tmp/$sig.err")"
        continue
    fi
    kill -s "$sig" "$pid"
    wait "$pid" && fail "SIG$sig: quantize exited 0 after the signal"
    left=$(ls -A "$tmp/$sig")
    [ "$left" = out.gguf.ckpt ] && ok || fail "SIG$sig: the interrupted run left: $left"
done

[ "$failed" -eq 0 ] && echo "cli_quant_interrupt: all passed"
exit $((failed > 0))
