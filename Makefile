# spillway - the two commands of the quick start, and the steps behind them.
#
#   make demo    install what is missing, build, bring the lab up, show it
#   make test    install what is missing, build, run every test suite
#
# Other targets: build, unit, asan, e2e, chaos, fuzz, bench, lab-up,
# lab-down, lab-status, format, clean.
BUILD ?= build
BUILD_ASAN ?= build-asan
JOBS ?= 2
FUZZ_SECONDS ?= 60

.PHONY: all deps build test unit asan e2e chaos fuzz bench demo lab-up lab-down lab-status format clean

all: build

deps:
	@scripts/install-deps.sh

# The test builds: warnings are errors, and the failpoints the end-to-end
# tests arm are compiled in (common/failpoint.h). A release build
# (deploy/Dockerfile, or cmake with default options) has none.
build: deps
	@cmake -S . -B $(BUILD) -G Ninja -DSW_WERROR=ON -DSW_FAILPOINTS=ON >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

test: deps
	@scripts/test-all.sh

unit: build
	@ctest --test-dir $(BUILD) -L unit --output-on-failure

asan: deps
	@cmake -S . -B $(BUILD_ASAN) -G Ninja -DSW_WERROR=ON -DSW_SANITIZE=ON -DSW_FAILPOINTS=ON >/dev/null
	@cmake --build $(BUILD_ASAN) -j $(JOBS)
	@ctest --test-dir $(BUILD_ASAN) -L unit --output-on-failure

# The libFuzzer targets (clang), FUZZ_SECONDS in all: tests/fuzz/run.sh.
fuzz: deps
	@tests/fuzz/run.sh $(FUZZ_SECONDS)

# The benchmarks (scripts/bench.sh): all, or those named in BENCH, e.g.
# BENCH=placement (no lab), BENCH="replication hub" (on the lab),
# BENCH=provision (on the lab in Karpenter mode; only when named),
# BENCH=kueue (spillway against MultiKueue, on the lab in its Kueue modes;
# only when named). The Alibaba evaluation needs its trace
# (ALIBABA_TRACE=PATH).
BENCH ?=
bench: build
	@BUILD=$(BUILD) scripts/bench.sh $(BENCH)

e2e: build
	@tests/testbed/testbed up >/dev/null
	@tests/testbed/testbed clean
	@eval "$$(tests/testbed/testbed env)" && SW_LAB_CLEANED=1 ctest --test-dir $(BUILD) -L e2e --output-on-failure

# The chaos suite, all of it (tests/e2e/hub/chaos.sh full; its fast cases
# run in `make test`): faults injected into the lab while Jobs burst, the
# invariants checked from outside, a table of faults, violations and RTO.
chaos: build
	@tests/testbed/testbed up >/dev/null
	@eval "$$(tests/testbed/testbed env)" && SW_SOURCE_DIR=$(CURDIR) SW_BUILD_DIR=$(abspath $(BUILD)) \
		bash tests/e2e/hub/chaos.sh full

demo: deps
	@scripts/demo.sh

lab-up: deps
	@tests/testbed/testbed up

lab-down:
	@tests/testbed/testbed down

lab-status:
	@tests/testbed/testbed status

format:
	@clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) build-fuzz
