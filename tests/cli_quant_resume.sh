#!/usr/bin/env bash
# CLI test of `edgelm quantize --resume` (issue 23): a GPTQ and an AWQ run of stories260K killed
# (SIGKILL, nothing can be cleaned up) after a block is done leave only their checkpoint OUT.ckpt;
# `--resume` goes on from it (it says from which block) and writes the same bytes as an
# uninterrupted run, then deletes the checkpoint. A damaged checkpoint (a byte changed in its
# records or header, cut short, not a checkpoint) and one made with other options or from another
# source file are refused with one line naming it. --resume without a checkpoint starts over.
# Usage: bash tests/cli_quant_resume.sh EDGELM_BINARY FIXTURES_DIR
set -u
bin=$1
fix=$2
f32=$fix/stories260K/stories260K-f32.gguf
. "$(dirname "$0")/lib/cli.sh"
set -m # job control: a background command keeps its default signal handlers

q() { # q METHOD OUT [options]: the calibrated run, 64 samples on one thread
    local method=$1 out=$2
    shift 2
    "$bin" quantize -m "$f32" --type q4_0 --method "$method" -t 1 --calib-samples 64 \
        --calib "$fix/stories260K/text/calib.txt" -o "$out" "$@"
}

# refused NAME PATTERN CMD...: expect_error, past the calibration line a calibrated run prints first
refused() {
    local name=$1 pattern=$2 rc
    shift 2
    "$@" >/dev/null 2>"$tmp/refused.err"
    rc=$?
    grep -v "^edgelm: [a-z]* calibration: " "$tmp/refused.err" >"$tmp/refused.rest"
    if [ "$rc" -eq 1 ] && [ "$(wc -l <"$tmp/refused.rest")" -eq 1 ] &&
        grep -q -- "^edgelm: .*$pattern" "$tmp/refused.rest"; then
        ok
    else
        fail "$name: exit status $rc, stderr '$(cat "$tmp/refused.err")'; want 1 and one line '$pattern'"
    fi
}

# interrupted METHOD DIR: a run into DIR/out.gguf killed once its second block is reported (the
# checkpoint then holds two blocks: it is committed before the block's progress line)
interrupted() {
    local method=$1 dir=$2
    mkdir -p "$dir"
    q "$method" "$dir/out.gguf" 2>"$dir.err" &
    local pid=$!
    if ! running_at "$pid" "$dir.err" "blk.1 "; then
        fail "$method: the run ended before it could be interrupted: $(cat "$dir.err")"
        return 1
    fi
    # the job's process group: $! is the subshell running q, and edgelm its child, which a kill
    # of the subshell alone leaves running to finish (and delete its checkpoint)
    kill -s KILL -- -"$pid"
    wait "$pid" 2>/dev/null
    [ "$(ls -A "$dir")" = "out.gguf.ckpt" ] && ok ||
        fail "$method: a killed run left '$(ls -A "$dir" | tr '\n' ' ')', not just its checkpoint"
}

for method in gptq awq; do
    # the reference; for awq through --resume with no checkpoint, which starts over
    if [ "$method" = gptq ]; then
        q gptq "$tmp/ref-gptq.gguf" 2>"$tmp/ref.err" || fail "gptq: $(cat "$tmp/ref.err")"
    else
        q awq "$tmp/ref-awq.gguf" --resume 2>"$tmp/ref.err" || fail "awq: $(cat "$tmp/ref.err")"
        grep -q "no checkpoint .*ref-awq.gguf.ckpt.* starting at block 0" "$tmp/ref.err" && ok ||
            fail "awq --resume without a checkpoint: $(cat "$tmp/ref.err")"
    fi
    [ -e "$tmp/ref-$method.gguf.ckpt" ] && fail "$method: a finished run left its checkpoint"
    interrupted "$method" "$tmp/$method" || continue
    ck=$tmp/$method/out.gguf.ckpt
    if [ "$method" = gptq ]; then
        # damaged copies, each where a resumed run would look for it
        size=$(stat -c %s "$ck")
        for bad in records header short text; do
            mkdir -p "$tmp/$bad"
            cp "$ck" "$tmp/$bad/out.gguf.ckpt"
        done
        python3 - "$tmp" "$size" <<'PY'
import sys
tmp, size = sys.argv[1], int(sys.argv[2])
def poke(path, off):
    with open(path, "r+b") as f:
        f.seek(off)
        b = f.read(1)
        f.seek(off)
        f.write(bytes([b[0] ^ 0x5a]))
poke(tmp + "/records/out.gguf.ckpt", size - 100)  # inside the last record's bytes
poke(tmp + "/header/out.gguf.ckpt", 40)           # a field of the header
with open(tmp + "/short/out.gguf.ckpt", "r+b") as f:
    f.truncate(size - 1000)
open(tmp + "/text/out.gguf.ckpt", "w").write("not a checkpoint\n")
PY
        for bad in records header short; do
            refused "checkpoint with a damaged $bad" "$tmp/$bad/out.gguf.ckpt: corrupt checkpoint" \
                q gptq "$tmp/$bad/out.gguf" --resume
            [ -e "$tmp/$bad/out.gguf" ] && fail "a refused checkpoint ($bad) left an output"
        done
        refused "not a checkpoint" "$tmp/text/out.gguf.ckpt: not an edgelm quantization checkpoint" \
            q gptq "$tmp/text/out.gguf" --resume
        mkdir -p "$tmp/opts"
        cp "$ck" "$tmp/opts/out.gguf.ckpt"
        refused "checkpoint of another type" "$tmp/opts/out.gguf.ckpt: checkpoint made with other options" \
            "$bin" quantize -m "$f32" --type q4_1 --method gptq -t 1 --calib-samples 64 \
            --calib "$fix/stories260K/text/calib.txt" -o "$tmp/opts/out.gguf" --resume
        refused "checkpoint of other calibration" "$tmp/opts/out.gguf.ckpt: checkpoint made with other options" \
            "$bin" quantize -m "$f32" --type q4_0 --method gptq -t 1 --calib-samples 63 \
            --calib "$fix/stories260K/text/calib.txt" -o "$tmp/opts/out.gguf" --resume
        cp "$f32" "$tmp/src.gguf"
        touch -d '2001-01-01' "$tmp/src.gguf"
        refused "checkpoint of another source" "$tmp/opts/out.gguf.ckpt: checkpoint made from another source file" \
            "$bin" quantize -m "$tmp/src.gguf" --type q4_0 --method gptq -t 1 --calib-samples 64 \
            --calib "$fix/stories260K/text/calib.txt" -o "$tmp/opts/out.gguf" --resume
    fi
    q "$method" "$tmp/$method/out.gguf" --resume 2>"$tmp/$method.resume.err" ||
        { fail "$method --resume: $(cat "$tmp/$method.resume.err")"; continue; }
    grep -q "resuming from .*out.gguf.ckpt: [2-4] of 5 blocks done" "$tmp/$method.resume.err" && ok ||
        fail "$method --resume does not say it resumed: $(head -3 "$tmp/$method.resume.err")"
    cmp -s "$tmp/$method/out.gguf" "$tmp/ref-$method.gguf" && ok ||
        fail "$method: the resumed run's file differs from the uninterrupted run's"
    [ "$(ls -A "$tmp/$method")" = "out.gguf" ] && ok ||
        fail "$method: after the resumed run the folder holds '$(ls -A "$tmp/$method" | tr '\n' ' ')'"
done

[ "$failed" -eq 0 ] && echo "cli_quant_resume: all passed ($passed checks)"
exit $((failed > 0))
