#!/usr/bin/env bash
# libFuzzer harnesses of the parsers (tests/fuzz/fuzz_*.c), built with clang's
# -fsanitize=fuzzer,address,undefined in build-fuzz/ (cached; one build at a time).
#   scripts/fuzz.sh build            configure and build the harnesses; exit 77 without clang
#   scripts/fuzz.sh seeds            seed corpora from ../shared/fixtures into build-fuzz/corpus/NAME
#   scripts/fuzz.sh run SECONDS [NAME...]
#                                    fuzz each harness (or the NAMEs) in turn for SECONDS of CPU time
#                                    (nice -n 19, one process), corpus grown in place, crashes saved to
#                                    build-fuzz/crashes/NAME/, one line per run appended to
#                                    tests/fuzz/fuzz-log.tsv (committed: the hours add up over sessions)
#   scripts/fuzz.sh replay           (seeds first where a harness has no corpus) every corpus input and every saved crash input
#                                    (tests/fuzz/crashes/NAME/*) through its harness, once: the
#                                    harnesses in $EDGELM_FUZZ_BIN (make test: the ASan tree's
#                                    replaying ones, build-asan/fuzz), else build-fuzz's
#   scripts/fuzz.sh table            docs/testing.md's table rows from tests/fuzz/fuzz-log.tsv
# Environment: EDGELM_FIXTURES (default ../shared/fixtures), EDGELM_CLI (an edgelm binary for
# the seeds that are written by the CLI; default build/edgelm).
set -u
repo=$(cd "$(dirname "$0")/.." && pwd)
out=$repo/build-fuzz
log=$repo/tests/fuzz/fuzz-log.tsv
export EDGELM_FIXTURES=${EDGELM_FIXTURES:-$(cd "$repo/../shared/fixtures" 2>/dev/null && pwd)}
fx=$EDGELM_FIXTURES
harnesses() { for f in "$repo"/tests/fuzz/fuzz_*.c; do basename "$f" .c; done; }

build() {
  command -v clang >/dev/null 2>&1 || { echo "SKIPPED: clang is not installed (scripts/deps.sh installs it as root)"; exit 77; }
  mkdir -p "$out"
  exec 9>"$out/lock"
  flock 9
  CC=clang cmake -S "$repo" -B "$out" -DCMAKE_BUILD_TYPE=Debug -DEDGELM_FUZZ=ON \
    -DEDGELM_SHARED="$fx/.." >"$out/configure.log" 2>&1 &&
    cmake --build "$out" --target fuzzers -j 2 >"$out/build.log" 2>&1 ||
    { echo "FAIL: fuzz build (see $out/*.log)" >&2; tail -20 "$out/build.log" >&2; exit 1; }
  flock -u 9
}

# put NAME FILE [PREFIX_BYTE]: one seed, optionally after a leading byte, named after the fixture's
# path (or "edgelm-" and the name for a file written here), so that seeds never collide and
# writing them again replaces them
put() {
  local d=$out/corpus/$1 name=${2#"$fx"/}
  [ "$name" = "$2" ] && name=edgelm-$(basename "$2")
  name=seed-${name//\//-}
  mkdir -p "$d"
  if [ $# -gt 2 ]; then
    { printf "\\x$3"; cat "$2"; } >"$d/$name-$3"
  else
    cp "$2" "$d/$name"
  fi
}

seeds() {
  local st=$fx/stories260K cli=${EDGELM_CLI:-$repo/build/edgelm} t
  t=$(mktemp -d -t edgelm-fuzz-seeds.XXXXXX)
  mkdir -p "$out/corpus"
  # GGUF: llama.cpp's q4_0 file, and tiny models of two families, of each hybrid, of Gemma 4 and
  # of qwen3moe and lfm2moe (per-layer keys, recurrent tensors, expert stacks, dense leading
  # layers, the router bias; small inputs fuzz faster)
  put fuzz_gguf "$st/reference-quants/llamacpp-q4_0-pure.gguf"
  for arch in llama qwen2 lfm2 granitehybrid qwen35 gemma4 qwen3moe lfm2moe; do
    "$cli" synth --arch $arch --tiny --vocab "$st/stories260K-f32.gguf" -o "$t/tiny-$arch.gguf" >/dev/null 2>&1 &&
      "$cli" quantize -m "$t/tiny-$arch.gguf" -o "$t/tiny-$arch-q4_0.gguf" --type q4_0 --pure >/dev/null 2>&1 &&
      put fuzz_gguf "$t/tiny-$arch-q4_0.gguf"
  done
  # MXFP4 experts (the loader's scale check on every block)
  "$cli" quantize -m "$t/tiny-qwen3moe.gguf" -o "$t/tiny-qwen3moe-mxfp4.gguf" --type mxfp4_moe >/dev/null 2>&1 &&
    put fuzz_gguf "$t/tiny-qwen3moe-mxfp4.gguf"
  # safetensors: a single file, and index + first shard
  put fuzz_safetensors "$st/hf-bf16-sharded/model-00002-of-00002.safetensors"
  { cat "$st/hf-bf16-sharded/model.safetensors.index.json"; printf '\n--\n'
    cat "$st/hf-bf16-sharded/model-00001-of-00002.safetensors"; } >"$t/index-and-shard"
  put fuzz_safetensors "$t/index-and-shard"
  # config.json (first byte odd) and tokenizer.json (even)
  put fuzz_hf_json "$st/hf-f32/config.json" 01
  put fuzz_hf_json "$st/hf-bf16-sharded/config.json" 01
  for arch in lfm2 granitehybrid qwen35 gemma4 lfm2moe; do
    "$cli" synth --arch $arch --tiny --vocab "$st/stories260K-f32.gguf" -o "$t/$arch.gguf" \
      --hf "$t/$arch-hf" >/dev/null 2>&1 && cp "$t/$arch-hf/config.json" "$t/$arch-config.json" &&
      put fuzz_hf_json "$t/$arch-config.json" 01 # a name of its own: seeds are named by file
  done
  put fuzz_hf_json "$st/hf-f32/tokenizer.json" 00
  # llama2.c: the tokenizer alone, and a model.bin (header + truncated arrays) with it
  put fuzz_llama2c "$st/tok512.bin"
  { head -c 4096 "$st/model.bin"; printf '\n--\n'; cat "$st/tok512.bin"; } >"$t/model-and-tok"
  put fuzz_llama2c "$t/model-and-tok"
  # calibration: text and JSONL, each split mode and template
  head -n 20 "$st/text/calib.txt" >"$t/calib.txt"
  head -n 8 "$st/text/calib.jsonl" >"$t/calib.jsonl"
  printf '{"question": "2+2?", "answer": "4", "n": [1, {"a": null}]}\n' >"$t/qa.jsonl"
  put fuzz_calib "$t/calib.txt" 00
  put fuzz_calib "$t/calib.txt" 01
  put fuzz_calib "$t/calib.jsonl" 00
  put fuzz_calib "$t/qa.jsonl" 02
  # documents for the chunker: a first byte of words (odd) or tokens and the limit, a second of
  # the overlap; headings, a fence with a '#' line and a blank line inside, a long paragraph
  { printf '\x0a'; head -c 3000 "$st/text/valid.txt"
    printf '\n# Title\n## Part\n\n```\n# code\n\nmore\n```\n#tag text\n'; } >"$t/doc.md"
  put fuzz_chunk "$t/doc.md" 21
  put fuzz_chunk "$t/doc.md" 40
  # a session (chat's /save) and an eval reference cache
  printf 'Hello\n/save %s\n' "$t/chat.session" | "$cli" chat -m "$st/stories260K-f32.gguf" -n 4 --temp 0 -c 64 -t 1 >/dev/null 2>&1 &&
    put fuzz_session "$t/chat.session" 01
  head -c 2400 "$st/text/valid.txt" >"$t/text.txt"
  "$cli" eval --ref "$st/stories260K-f32.gguf" -f "$t/text.txt" -c 128 -t 1 --save-ref "$t/ref.elmref" >/dev/null 2>&1 &&
    put fuzz_session "$t/ref.elmref" 00
  # chat messages: system, user, assistant, user separated by NUL, each template
  printf 'You tell stories.\0Hello <|im_end|> [INST]\0Once upon a time\0\xe2\x96\x81more\0' >"$t/msgs"
  for k in 00 01 02 03 84 85; do put fuzz_chat_template "$t/msgs" $k; done
  # replies with tool calls first, in the syntaxes of Qwen3.5 (template 12), Granite 4.0 (14) and
  # Llama 3.1/3.2 (18, 19)
  printf 'Sure.\n<tool_call>\n<function=f>\n<parameter=x>\n1\n</param\n</parameter>\n</function>\n</tool_call>\0Hi\0\0{"a": 1}\0' >"$t/msgs-xml"
  printf '<tool_call>\n{"name": "f", "arguments": {"x": [1, "y"]}}\n</tool_call>\0Hi\0\0{"x": 2}\0' >"$t/msgs-hermes"
  printf '{"name": "f", "parameters": {"x": true}}; {"name": "g", "parameters": {}}\0Hi\0\0{}\0' >"$t/msgs-llama"
  put fuzz_chat_template "$t/msgs-xml" 0c
  put fuzz_chat_template "$t/msgs-hermes" 0e
  put fuzz_chat_template "$t/msgs-llama" 12
  put fuzz_chat_template "$t/msgs-llama" 93
  # Gemma 4's (15): its value syntax, quoted and bare keys, a call cut short
  printf '<|tool_call>call:f{a:<|"|>x<|<|"|>,b:[1,None,{<|"|>k<|"|>:true}]}<tool_call|><|tool_call>call:g{\0Hi\0\0{"b": [1, {"a": null}]}\0' >"$t/msgs-gemma4"
  put fuzz_chat_template "$t/msgs-gemma4" 0f
  # imatrix: llama-imatrix's files (stories260K's names and shapes, and wide256's), and edgelm's
  put fuzz_imatrix "$st/reference-quants/llamacpp-imatrix-calib.gguf"
  put fuzz_imatrix "$fx/wide256/reference-quants/llamacpp-imatrix-calib.gguf"
  "$cli" imatrix -m "$st/stories260K-f32.gguf" -f "$t/text.txt" -c 64 -t 1 -o "$t/imatrix.gguf" >/dev/null 2>&1 &&
    put fuzz_imatrix "$t/imatrix.gguf"
  # server requests: chat bodies (odd first byte; the rest picks the template) and completions
  printf '%s' '{"model": "m", "messages": [{"role": "system", "content": "You tell stories."}, {"role": "user", "content": "Once upon a time"}], "temperature": 0.7, "top_p": 0.9, "top_k": 40, "max_tokens": 16, "seed": 42, "stop": ["\n", "The end"], "stream": true}' >"$t/chat.json"
  printf '%s' '{"messages": [{"role": "user", "content": [{"type": "text", "text": "Hello "}, {"type": "text", "text": "there"}]}, {"role": "assistant", "content": "Hi"}, {"role": "user", "content": "A story?"}], "min_p": 0.05, "repeat_penalty": 1.1, "presence_penalty": 0, "n": 1, "max_completion_tokens": 8, "ignore_eos": false, "stream": null, "logprobs": true, "top_logprobs": 5}' >"$t/chat-parts.json"
  printf '%s' '{"model": "m", "prompt": "Once upon a time", "max_tokens": 32, "temperature": 0, "stop": ".", "logprobs": 3}' >"$t/completion.json"
  printf '%s' '{"prompt": ["Lily went"], "frequency_penalty": 0.5, "seed": -1, "top_k": 0}' >"$t/completion-array.json"
  for k in 01 03 05 07 09 0b 87; do put fuzz_server_request "$t/chat.json" $k; done
  put fuzz_server_request "$t/chat-parts.json" 01
  put fuzz_server_request "$t/chat-parts.json" 03
  put fuzz_server_request "$t/completion.json" 00
  put fuzz_server_request "$t/completion-array.json" 80
  printf '%s' '{"prompt": "Once", "response_format": {"type": "json_schema", "json_schema": {"name": "x", "strict": true, "schema": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}, "required": ["n"]}}}}' >"$t/completion-schema.json"
  printf '%s' '{"prompt": "Once", "grammar": "root ::= [a-z]{1,8} (\" \" root)?"}' >"$t/completion-grammar.json"
  put fuzz_server_request "$t/completion-schema.json" 00
  # chat with tools on the templates that have them (first byte 2t+1: template t)
  printf '%s' '{"messages": [{"role": "user", "content": "Weather?"}, {"role": "assistant", "content": null, "tool_calls": [{"id": "a", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]}, {"role": "tool", "tool_call_id": "a", "content": "Sunny"}, {"role": "user", "content": "And tomorrow?"}], "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 7}, "unit": {"enum": ["C", "F"]}}, "required": ["city"]}}}], "tool_choice": "required", "parallel_tool_calls": false}' >"$t/chat-tools.json"
  for k in 0d 19 1d 1f 25 27; do put fuzz_server_request "$t/chat-tools.json" $k; done
  put fuzz_server_request "$t/completion-grammar.json" 00
  # grammars: the first byte cuts the input into the grammar and a text
  printf '%s' 'root ::= "{" ws pair ("," ws pair)* "}"
pair ::= "\"" [a-z]+ "\"" ws ":" ws (num | "true" | [^\x00-\x1f"]{0,4}) # comment
num ::= "-"? [1-9] [0-9]{0,3}
ws ::= [ \t\n]?{"a": 12,"b":true}' >"$t/grammar"
  put fuzz_grammar "$t/grammar" e8
  # Responses API bodies: text, items with a call and its output, tools, text.format
  printf '%s' '{"model": "m", "instructions": "Be brief.", "input": [{"role": "user", "content": [{"type": "input_text", "text": "Weather?"}]}, {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}, {"type": "function_call_output", "call_id": "c1", "output": "Sunny"}], "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}], "tool_choice": {"type": "function", "name": "get_weather"}, "max_output_tokens": 32, "stream": true}' >"$t/responses-tools.json"
  printf '%s' '{"input": "A number", "temperature": 0.5, "text": {"format": {"type": "json_schema", "name": "n", "schema": {"type": "integer", "minimum": 1}}}}' >"$t/responses-format.json"
  put fuzz_server_responses "$t/responses-tools.json"
  put fuzz_server_responses "$t/responses-format.json"
  # JSON schemas: objects, refs, combinators, bounds and formats
  printf '%s' '{"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer", "minimum": -5, "exclusiveMaximum": 120}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}}, "required": ["v"], "additionalProperties": false}}, "anyOf": [{"$ref": "#/$defs/node"}, {"type": "string", "format": "date", "maxLength": 12}, {"enum": [null, 1.5, "x"]}]}' >"$t/schema-tree.json"
  printf '%s' '{"type": "object", "properties": {"t": {"const": "a"}, "n": {"type": "number", "minimum": 0, "maximum": 10}, "id": {"type": "string", "format": "uuid"}, "at": {"type": "string", "format": "date-time"}, "p": {"type": "array", "prefixItems": [{"type": "boolean"}, {"type": "null"}], "items": false}}, "required": ["t"], "oneOf": [{"required": ["n"]}]}' >"$t/schema-object.json"
  put fuzz_json_schema "$t/schema-tree.json"
  put fuzz_json_schema "$t/schema-object.json"
  # /tokenize (even first byte) and /detokenize (odd) bodies
  printf '%s' '{"content": "Once upon a time <s> h\u00e9llo \u65e5", "add_special": true, "parse_special": false, "with_pieces": true}' >"$t/tokenize.json"
  printf '%s' '{"tokens": [1, 403, 407, 261, 378, 0, 511]}' >"$t/detokenize.json"
  put fuzz_server_tokenize "$t/tokenize.json" 00
  put fuzz_server_tokenize "$t/detokenize.json" 01
  # /v1/embeddings bodies (the first byte: most tokens an input may have, minus 1)
  printf '%s' '{"model": "m", "input": ["Once upon a time", "h\u00e9llo <s> \u65e5"], "encoding_format": "base64", "dimensions": 16}' >"$t/embeddings.json"
  printf '%s' '{"input": [[1, 403, 407], [261, 378, 0, 511]], "encoding_format": "float"}' >"$t/embeddings-ids.json"
  put fuzz_server_embeddings "$t/embeddings.json" 3f
  put fuzz_server_embeddings "$t/embeddings-ids.json" 07
  # ONNX export: the tiny models (default form, accuracy level 4, QNN form) and llama.cpp's q4_0
  for arch in llama qwen2; do
    [ -f "$t/tiny-$arch-q4_0.gguf" ] && for k in 00 02 01; do put fuzz_export_onnx "$t/tiny-$arch-q4_0.gguf" $k; done
  done
  put fuzz_export_onnx "$st/reference-quants/llamacpp-q4_0-pure.gguf" 00
  rm -rf "$t"
  for h in $(harnesses); do
    [ -n "$(ls "$out/corpus/$h" 2>/dev/null)" ] || { echo "FAIL: no seed for $h" >&2; exit 1; }
  done
}

# One line per run: when, harness, CPU seconds it had (user + system, bash's time: on a machine
# shared with builds and benchmarks its wall time would overstate the fuzzing), executions,
# coverage, exit status. A harness runs again, for the time still left, until it has had SECONDS
# of CPU time (or a run fails: a crash stops it there).
run() {
  local secs=$1 h hlog rc used cpu execs cov TIMEFORMAT='%3U %3S'
  shift
  for h in ${@:-$(harnesses)}; do
    [ -x "$out/$h" ] || { echo "FAIL: no harness $h" >&2; return 1; }
    mkdir -p "$out/crashes/$h" "$out/corpus/$h"
    hlog=$out/$h.log
    used=0
    while [ "$used" -lt "$secs" ]; do
      { time nice -n 19 "$out/$h" "$out/corpus/$h" -max_total_time="$((secs - used))" -max_len=1048576 \
          -rss_limit_mb=4096 -timeout=30 -print_final_stats=1 -artifact_prefix="$out/crashes/$h/" \
          >"$hlog" 2>&1; } 2>"$out/$h.cpu"
      rc=$?
      cpu=$(awk '{ printf "%d", $1 + $2 + 0.5 }' "$out/$h.cpu")
      execs=$(grep -ao 'stat::number_of_executed_units: *[0-9]*' "$hlog" | tail -1 | grep -o '[0-9]*$')
      cov=$(grep -ao 'cov: [0-9]*' "$hlog" | tail -1 | grep -o '[0-9]*')
      printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$h" "${cpu:-0}" "${execs:-0}" \
        "${cov:-0}" "$rc" | tee -a "$log"
      used=$((used + ${cpu:-0}))
      [ "$rc" -eq 0 ] && [ "${cpu:-0}" -gt 0 ] || break
    done
  done
}

# Whether every harness has a corpus (harnesses added since the corpora were written have none).
have_seeds() {
  local h
  for h in $(harnesses); do [ -n "$(ls "$out/corpus/$h" 2>/dev/null)" ] || return 1; done
}

replay() {
  local h rc=0 crashes bin=${EDGELM_FUZZ_BIN:-$out}
  for h in $(harnesses); do
    [ -x "$bin/$h" ] || { echo "FAIL: no harness $bin/$h" >&2; rc=1; continue; }
    if [ -d "$out/corpus/$h" ]; then
      "$bin/$h" "$out/corpus/$h" -runs=0 >"$out/$h.replay.log" 2>&1 ||
        { echo "FAIL: $h on its corpus (see $out/$h.replay.log)" >&2; tail -30 "$out/$h.replay.log" >&2; rc=1; }
    fi
    crashes=$(ls "$repo/tests/fuzz/crashes/$h"/* 2>/dev/null)
    if [ -n "$crashes" ]; then
      # shellcheck disable=SC2086
      "$bin/$h" $crashes >"$out/$h.crashes.log" 2>&1 ||
        { echo "FAIL: $h on a saved crash input (see $out/$h.crashes.log)" >&2; tail -30 "$out/$h.crashes.log" >&2; rc=1; }
    fi
  done
  return $rc
}

# The docs/testing.md table rows from tests/fuzz/fuzz-log.tsv: hours, executions, the highest
# coverage (libFuzzer's "cov", edges) and the saved crash inputs, per harness.
table() {
  awk -F'\t' -v repo="$repo" '/^#/ { next } { s[$2] += $3; e[$2] += $4; if ($5 > c[$2]) c[$2] = $5 }
    END { for (h in s) {
      cmd = "ls " repo "/tests/fuzz/crashes/" h " 2>/dev/null | wc -l"; cmd | getline n; close(cmd)
      printf "| %s | %.2f | %d | %d | %d |\n", h, s[h] / 3600, e[h], c[h], n } }' "$log" | sort
}

case ${1:-} in
  build) build ;;
  seeds) seeds ;;
  run) build && { have_seeds || seeds; } && shift && run "${1:-60}" "${@:2}" ;;
  replay) { have_seeds || seeds; } && replay ;;
  table) table ;;
  *) echo "usage: scripts/fuzz.sh build|seeds|run SECONDS [NAME...]|replay|table" >&2; exit 2 ;;
esac
