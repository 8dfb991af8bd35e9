# What the llama.cpp reference of the hybrid families is made from (scripts/hybrid_golden.sh) and
# checked on (tests/cli_hybrid_llamacpp.sh): the recipes, the text, and the model.
RECIPES="q2_k q3_k_m q3_k_l q4_k_s q4_k_m q5_k_s q5_k_m q6_k iq4_nl iq4_xs q8_0"
# the mixtures of experts, which get mxfp4_moe (experts in MXFP4, the rest Q8_0) as well
MOE_FAMILIES="qwen3moe lfm2moe gpt-oss qwen35moe granitehybrid-experts"

# recipes_of ARCH: the recipes checked on the family
recipes_of() {
    case " $MOE_FAMILIES " in
    *" $1 "*) echo "$RECIPES mxfp4_moe" ;;
    *) echo "$RECIPES" ;;
    esac
}
EVAL_TEXT=stories260K/text/valid.txt

# hybrid_tiny EDGELM FIXTURES ARCH OUT.gguf: the family's synth --tiny model at width 256 with
# stories260K's vocabulary, seed 3, weights N(0, 0.05²) (small enough that its perplexity is
# a language model's, not a random one's). Gemma 4's at N(0, 0.02²): at 0.05 its blocks amplify
# any change of the last bit (GeGLU's tanh against its sigmoid form moved the Q4_K_M file's PPL
# 0.14%, its KLD was 0.34), so PPL within 0.1% of llama.cpp's measured chance, not agreement.
# ARCH-experts: the family's form with experts (synth --experts; granitehybrid-experts).
hybrid_tiny() {
    local std=0.05 opts=()
    [ "$3" = gemma4 ] && std=0.02
    [ "${3%-experts}" = "$3" ] || opts=(--experts)
    "$1" synth --arch "${3%-experts}" "${opts[@]}" --tiny --width 256 -s 3 --std "$std" \
        --vocab "$2/stories260K/stories260K-f32.gguf" -o "$4"
}
