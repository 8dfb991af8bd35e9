#!/usr/bin/env bash
# `edgelm run` and `edgelm chat` held to --json-schema FILE and --grammar FILE: greedy and sampled
# replies of stories260K are JSON valid under the schema (checked in Python, field by field) or
# text the grammar describes; bad files and combinations end in one error line naming them.
# usage: cli_grammar.sh EDGELM FIXTURES
set -u
bin=$1 fx=$2
model=$fx/stories260K/stories260K-f32.gguf
. "$(dirname "$0")/lib/cli.sh"

cat >"$tmp/person.json" <<'JSON'
{"type": "object", "properties": {
   "name": {"type": "string", "minLength": 1, "maxLength": 10},
   "age": {"type": "integer", "minimum": 1, "maximum": 99},
   "kind": {"enum": ["cat", "dog"]}},
 "required": ["name", "age", "kind"], "additionalProperties": false}
JSON
for args in "--temp 0" "--temp 0.8 -s 1" "--temp 1.5 -s 2" "--temp 1 -s 3 --top-k 0 --top-p 1 --min-p 0"; do
    # shellcheck disable=SC2086
    "$bin" run -m "$model" -p "Lily had a pet" -n 200 $args --json-schema "$tmp/person.json" \
        --json >"$tmp/out.json" 2>"$tmp/err" || { fail "run $args: $(cat "$tmp/err")"; continue; }
    python3 - "$tmp/out.json" <<'PY' && ok || fail "run $args: not valid under the schema"
import json, sys
reply = json.load(open(sys.argv[1]))["text"]
d = json.loads(reply)
assert sorted(d) == ["age", "kind", "name"], d
assert isinstance(d["name"], str) and 1 <= len(d["name"]) <= 10, d
assert type(d["age"]) is int and 1 <= d["age"] <= 99, d
assert d["kind"] in ("cat", "dog"), d
PY
done

printf 'root ::= "The " ("cat" | "dog") " ate " [0-9]{1,3} " " [a-z]+ "."\n' >"$tmp/g.gbnf"
out=$("$bin" run -m "$model" -p "Once upon a time" -n 60 --temp 1 -s 7 --grammar "$tmp/g.gbnf" 2>/dev/null)
echo "$out" | grep -Eqx 'Once upon a timeThe (cat|dog) ate [0-9]{1,3} [a-z]+\.' && ok ||
    fail "run --grammar: '$out'"
# chat: every reply of the conversation follows the grammar
printf 'Hello\nTell me more\n' | "$bin" chat -m "$model" --template chatml -n 60 --temp 0.9 -s 3 \
    --grammar "$tmp/g.gbnf" >"$tmp/chat.out" 2>"$tmp/chat.err" || fail "chat --grammar: $(cat "$tmp/chat.err")"
[ "$(grep -Ec '(^|> )The (cat|dog) ate [0-9]{1,3} [a-z]+\.$' "$tmp/chat.out")" -eq 2 ] && ok ||
    fail "chat --grammar replies: '$(cat "$tmp/chat.out")'"

printf '{"type": "string", "pattern": "^a+$"}' >"$tmp/pattern.json"
expect_error "unsupported keyword" "pattern.json: .*pattern" \
    "$bin" run -m "$model" -p x -n 4 --json-schema "$tmp/pattern.json"
printf '{"type": ' >"$tmp/broken.json"
expect_error "schema not JSON" "broken.json" "$bin" run -m "$model" -p x -n 4 --json-schema "$tmp/broken.json"
printf 'root ::= "a" undefined-rule\n' >"$tmp/bad.gbnf"
expect_error "undefined rule" "bad.gbnf:1: rule undefined-rule is used but not defined" \
    "$bin" run -m "$model" -p x -n 4 --grammar "$tmp/bad.gbnf"
expect_error "missing grammar file" "nowhere.gbnf" "$bin" run -m "$model" -p x -n 4 --grammar "$tmp/nowhere.gbnf"
expect_error "both" "cannot be combined" \
    "$bin" run -m "$model" -p x -n 4 --grammar "$tmp/g.gbnf" --json-schema "$tmp/person.json"
expect_error "with lookup" "cannot be combined with --draft or --lookup" \
    "$bin" run -m "$model" -p x -n 4 --grammar "$tmp/g.gbnf" --lookup 3
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
