#!/usr/bin/env bash
# -DEDGELM_MINIMAL=ON (the library an app links): examples/chat.c, linked against it, loads the
# stories260K GGUF and answers a message, with a non-empty reply and its stats line (one message:
# the ARM64 run is under qemu).
# usage: tests/minimal_example.sh EXAMPLE_CHAT FIXTURES
set -u
ex=$1 fixtures=$2
model=$fixtures/stories260K/stories260K-f32.gguf
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
printf 'Tell me a story.\n' | ${EDGELM_EMULATOR:-} "$ex" "$model" "You tell stories." 1 >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 0 ] && [ "$(grep -c 'first token' "$tmp/err")" = 1 ] && [ -s "$tmp/out" ]; then
  echo "minimal_example: ok: $(wc -w <"$tmp/out") words of reply"
  exit 0
fi
echo "minimal_example: FAIL: exit status $rc, stderr: $(cat "$tmp/err")"
exit 1
