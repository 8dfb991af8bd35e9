# What the llama.cpp reference of the experts' importance matrices is made from
# (scripts/moe_imatrix_golden.sh) and checked on (tests/cli_moe_imatrix.sh), with the model of
# tests/lib/hybrid.sh: the text and its chunk size.
MOE_IMATRIX_CTX=128

# moe_imatrix_text FIXTURES OUT: 1100 bytes of stories260K's valid.txt from byte 4096, 4 chunks.
# llama.cpp's hidden states differ from edgelm's by some 1e-4 (its attention), which flips the
# router's choice where two experts nearly tie: a few of 7680 routings per layer on the first
# 8 KiB. This piece was picked as one where none flips in any of the three families, so the
# counts can be held equal.
moe_imatrix_text() {
    tail -c +4097 "$1/stories260K/text/valid.txt" | head -c 1100 >"$2"
}
