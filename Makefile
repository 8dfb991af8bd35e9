# Thin wrapper over CMake. `make demo` runs the main job, `make test` runs every test.
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
BUILD   ?= build
ASAN    ?= build-asan
PREFIX  ?= /usr/local
SHARED  ?= $(CURDIR)/../shared

.PHONY: all deps build asan test test-release test-asan demo install clean

all: build

deps:
	@bash scripts/deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DEDGELM_SHARED=$(SHARED) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) -- --no-print-directory

asan: deps
	@cmake -S . -B $(ASAN) -DCMAKE_BUILD_TYPE=Debug -DEDGELM_SANITIZE=ON -DEDGELM_SHARED=$(SHARED) >/dev/null
	@cmake --build $(ASAN) -j $(JOBS) -- --no-print-directory

test-release: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan: asan
	@cd $(ASAN) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j $(JOBS)

test: test-release test-asan

demo: build
	@bash scripts/demo.sh $(BUILD)/edgelm

install: build
	@cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) $(ASAN)
