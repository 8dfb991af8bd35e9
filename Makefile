# Thin wrapper over CMake. `make demo` runs the main job, `make test` runs every test.
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
BUILD   ?= build
ASAN    ?= build-asan
CLANG   ?= build-clang
ARM64   ?= build-arm64
PREFIX  ?= /usr/local
SHARED  ?= $(CURDIR)/../shared

FUZZ_SECONDS ?= 60
FUZZ_HARNESSES ?=

.PHONY: all deps build asan clang test test-release test-clang test-asan test-arm64 demo install clean fuzz

all: build

deps:
	@bash scripts/deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DEDGELM_SHARED=$(SHARED) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) -- --no-print-directory

asan: deps
	@cmake -S . -B $(ASAN) -DCMAKE_BUILD_TYPE=Debug -DEDGELM_SANITIZE=ON -DEDGELM_SHARED=$(SHARED) >/dev/null
	@cmake --build $(ASAN) -j $(JOBS) -- --no-print-directory

# The same tree built by clang (what the Android NDK and Apple ship): warning-free with -Werror.
clang: deps
	@cmake -S . -B $(CLANG) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Release -DEDGELM_SHARED=$(SHARED) >/dev/null
	@cmake --build $(CLANG) -j $(JOBS) -- --no-print-directory

test-release: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -O ctest.log

# The whole release suite again with clang's build, but for tests whose work does not depend on
# the compiler (docs/building.md): cli_tsan builds its own ThreadSanitizer tree with `cc`,
# cli_interop_arch and cli_embed_interop spend their minutes in llama.cpp under node,
# cli_export_onnx in ONNX Runtime, cli_plan is arithmetic of sizes, cli_kquant_eval scores files
# whose kernels cli_kquant checks, cli_python drives the same library through ctypes,
# cli_hybrid_llamacpp's encoders and recipe rules are checked against llama.cpp's files in
# test_kquant_quantize, cli_iquant_recipes and cli_kquant_interop, cli_quant_budget_wide256 measures
# KLD bars of the budget that cli_quant_budget runs; the greedy goldens (test_generate,
# test_isa), cli_kquant_interop and cli_quant_interop check clang's numerics.
CLANG_SKIP ?= ^(cli_tsan|cli_interop_arch|cli_embed_interop|cli_export_onnx|cli_plan|cli_kquant_eval|cli_python|cli_hybrid_llamacpp|cli_quant_budget_wide256)$$
test-clang: clang
	@cd $(CLANG) && ctest --output-on-failure -j $(JOBS) -E '$(CLANG_SKIP)' -O ctest.log

# The release suite under ASan+UBSan, but for tests whose sanitized minutes would repeat what
# other tests check under it: cli_tsan builds its own tree; cli_interop_arch, cli_embed_interop
# and cli_kquant_interop spend their minutes in llama.cpp under node (every
# family's loaders and forward pass run sanitized in cli_arch and cli_hybrid, the embeddings in
# cli_embed, the k-quant kernels in cli_kquant and test_kquant_*, the quantizers in test_gptq,
# test_awq and cli_quant_*); cli_hybrid_llamacpp quantizes 4 models to 11 recipes and scores them (16 minutes
# sanitized: the codecs run under it in cli_kquant, test_kquant_*, the hybrids' in cli_hybrid);
# cli_iquant_recipes writes 22 files whose encoders run sanitized in cli_iquant_write and whose
# rules in test_iquant_recipes; cli_quant_budget_wide256 measures KLD bars of the budget that
# cli_quant_budget runs sanitized.
ASAN_SKIP ?= ^(cli_tsan|cli_interop_arch|cli_embed_interop|cli_kquant_interop|cli_hybrid_llamacpp|cli_iquant_recipes|cli_quant_budget_wide256)$$
test-asan: asan
	@cd $(ASAN) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j $(JOBS) -E '$(ASAN_SKIP)' -O ctest.log

# ARM64 cross builds with gcc and with clang (the latter -DEDGELM_MINIMAL=ON): kernel, greedy golden
# and ISA tests under qemu-aarch64, the JNI bridge (skipped with one line when the cross tools
# cannot be installed).
test-arm64:
	@bash scripts/test_arm64.sh $(ARM64) $(SHARED)

# Tests that could not run here end with ctest's skip code: listed once more at the very end.
test: test-release test-clang test-asan test-arm64
	@bash scripts/skipped.sh $(BUILD) $(CLANG) $(ASAN) $(ARM64) $(ARM64)-clang

# Each libFuzzer harness (or those in FUZZ_HARNESSES) in turn for FUZZ_SECONDS of CPU time (docs/testing.md);
# `make test` replays the corpora through the ASan tree's harnesses (tests/cli_fuzz.sh).
fuzz: build
	@bash scripts/fuzz.sh run $(FUZZ_SECONDS) $(FUZZ_HARNESSES)

demo: build
	@bash scripts/demo.sh $(BUILD)/edgelm

install: build
	@cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	@cmake --install $(BUILD)

clean:
	rm -rf $(BUILD) $(CLANG) $(ASAN) $(ARM64) $(ARM64)-clang build-tsan
