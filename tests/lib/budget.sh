# Shared by the size budget's tests (cli_quant_budget*.sh), after cli.sh.

# budget_target BIN MODEL REF_FILE_BYTES: the --target-size (tensor data) at which MODEL's budget
# file is no larger than a file of REF_FILE_BYTES: those bytes less this file's own header and
# metadata (measured on a q8_0 file of the model) and 32 bytes of alignment per tensor.
budget_target() {
    "$1" quantize -m "$2" -o "$tmp/budget-q8.gguf" --type q8_0 --json >"$tmp/budget-q8.json" \
        2>"$tmp/err" || { echo "q8_0: $(tail -1 "$tmp/err")" >&2; return 1; }
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(int(sys.argv[2]) - (d["file_bytes"] - d["tensor_bytes"]) - 32 * len(d["tensors"]))' \
        "$tmp/budget-q8.json" "$3"
}
