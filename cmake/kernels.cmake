# Per-file flags of the SIMD kernels. clang before version 16 declares the ARM dot-product
# intrinsics only when the translation unit is compiled for them (__ARM_FEATURE_DOTPROD), so with
# clang on ARM64 the NEON file gets -march=ELM_TARGET_NEON (src/kernels/targets.h, read here so the
# two cannot drift); gcc uses the per-function target attribute instead.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$" AND CMAKE_C_COMPILER_ID MATCHES "Clang")
  file(STRINGS ${PROJECT_SOURCE_DIR}/src/kernels/targets.h neon_line REGEX "^#define ELM_TARGET_NEON ")
  if(NOT neon_line MATCHES "\"([^\"]+)\"")
    message(FATAL_ERROR "ELM_TARGET_NEON not found in src/kernels/targets.h")
  endif()
  set_source_files_properties(${PROJECT_SOURCE_DIR}/src/kernels/arm/neon.c
    ${PROJECT_SOURCE_DIR}/src/kernels/arm/kquant_neon.c PROPERTIES COMPILE_OPTIONS "-march=${CMAKE_MATCH_1}")
endif()
