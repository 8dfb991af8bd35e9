# The llama-quantize recipes the hybrid recipe check compares (tests/cli_hybrid_recipes.sh,
# scripts/recipe_golden.sh).
RECIPES="q2_k q3_k_m q3_k_l q4_k_s q4_k_m q5_k_s q5_k_m q6_k iq4_nl iq4_xs q8_0"
