# Thin wrapper over CMake. Each target installs missing Debian packages first.
BUILD      ?= build
BUILD_ASAN ?= build-asan
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=

.PHONY: all deps build demo test test-asan bench clean

all: build

deps:
	@scripts/setup-deps.sh

$(BUILD)/build.ninja: | deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DARLSIM_WERROR=ON $(CMAKE_ARGS)

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

# The demo builds only the program it runs (the tests and benchmarks wait for `make test`).
demo: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target arlsim
	$(BUILD)/app/arlsim

test: build
	@scripts/setup-deps.sh --test
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -LE gpu

test-asan: deps
	cmake --preset asan
	cmake --build $(BUILD_ASAN) -j $(JOBS)
	cd $(BUILD_ASAN) && ctest --output-on-failure -j $(JOBS) -LE gpu

bench: build
	$(BUILD)/tests/event_bench
	$(BUILD)/tests/dispatch_bench
	$(BUILD)/tests/estimate_bench
	$(BUILD)/tests/rollout_bench
	$(BUILD)/tests/planner_bench
	tests/bench/capacity_bench.sh $(BUILD)
	tests/bench/timeline_memory.sh $(BUILD) 100 1000
	tests/bench/scale_bench.sh $(BUILD)
	if [ -x $(BUILD)/tests/view_bench ]; then d=$$(mktemp -d); (cd $$d && QT_QPA_PLATFORM=offscreen $(CURDIR)/$(BUILD)/tests/view_bench); s=$$?; rm -rf $$d; exit $$s; fi
	$(BUILD)/tests/dispatch_validation
	tests/bench/agreement.sh $(BUILD)
	tests/bench/validate_model.sh $(BUILD)
	tests/bench/validate_runtime.sh $(BUILD) 3
	d=$$(mktemp -d); tests/bench/trace_load_bench.sh $(BUILD) $$d && tests/bench/simulate_bench.sh $(BUILD) $$d; \
	  s=$$?; rm -rf $$d; exit $$s

clean:
	rm -rf $(BUILD) $(BUILD_ASAN)
