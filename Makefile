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

# clang's build (what the Android NDK and Apple ship) is built whole with -Werror; of its tests
# run those that check the second compiler's numerics (docs/building.md): the C tests (kernels
# against their scalar oracles, the greedy goldens test_generate and test_isa, the quantizers and
# forward passes against references) and the scripts that compare kernels, encoders and recipes
# with llama.cpp's files byte for byte or logit for logit. The other scripts drive the same
# library through the CLI, the server, node or python, which the release run checks.
CLANG_TESTS ?= ^(test_.*|cli_kquant|cli_kquant_interop|cli_quant_interop|cli_iquant|cli_iquant_write|cli_iquant_recipes|cli_mxfp4_interop)$$
test-clang: clang
	@cd $(CLANG) && ctest --output-on-failure -j $(JOBS) -R '$(CLANG_TESTS)' -O ctest.log

# The release suite under ASan+UBSan, but for tests whose sanitized minutes would repeat what
# other tests check under it: cli_tsan builds its own tree; cli_interop_arch, cli_embed_interop
# and cli_kquant_interop spend their minutes in llama.cpp under node (every
# family's loaders and forward pass run sanitized in cli_arch and cli_hybrid, the embeddings in
# cli_embed, the k-quant kernels in cli_kquant and test_kquant_*, the quantizers in test_gptq,
# test_awq and cli_quant_*); cli_hybrid_llamacpp quantizes 4 models to 11 recipes and scores them (16 minutes
# sanitized: the codecs run under it in cli_kquant, test_kquant_*, the hybrids' in cli_hybrid);
# cli_iquant_recipes writes 22 files whose encoders run sanitized in cli_iquant_write and whose
# rules in test_iquant_recipes; cli_quant_budget_wide256 measures KLD bars of the budget that
# cli_quant_budget runs sanitized; cli_mxfp4_interop runs MXFP4 files in llama.cpp under node (the
# codec sanitized in test_mxfp4, its kernels in test_kquant_kernels, the families in cli_arch and
# cli_hf_mxfp4).
ASAN_SKIP ?= ^(cli_tsan|cli_interop_arch|cli_embed_interop|cli_kquant_interop|cli_hybrid_llamacpp|cli_iquant_recipes|cli_quant_budget_wide256|cli_mxfp4_interop)$$
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
