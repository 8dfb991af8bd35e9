# Per-file flags of the SIMD kernels. clang before version 16 declares the ARM dot-product
# intrinsics only when the translation unit is compiled for them (__ARM_FEATURE_DOTPROD), so with
# clang on ARM64 the NEON files get -march=ELM_TARGET_NEON, and the BF16 one ELM_TARGET_NEON_BF16
# (src/kernels/targets.h, read here so the two cannot drift); gcc uses the per-function target
# attribute instead.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$" AND CMAKE_C_COMPILER_ID MATCHES "Clang")
  foreach(target NEON NEON_BF16)
    file(STRINGS ${PROJECT_SOURCE_DIR}/src/kernels/targets.h line REGEX "^#define ELM_TARGET_${target} ")
    if(NOT line MATCHES "\"([^\"]+)\"")
      message(FATAL_ERROR "ELM_TARGET_${target} not found in src/kernels/targets.h")
    endif()
    set(march_${target} "-march=${CMAKE_MATCH_1}")
  endforeach()
  set_source_files_properties(${PROJECT_SOURCE_DIR}/src/kernels/arm/neon.c
    ${PROJECT_SOURCE_DIR}/src/kernels/arm/kquant_neon.c PROPERTIES COMPILE_OPTIONS "${march_NEON}")
  set_source_files_properties(${PROJECT_SOURCE_DIR}/src/kernels/arm/neon_bf16.c
    PROPERTIES COMPILE_OPTIONS "${march_NEON_BF16}")
endif()
