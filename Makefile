# The two quickstart commands (README): `make demo` and `make test`. Both install what they
# need, and installing resolves nothing: each venv gets exactly the versions of its lock file
# (requirements/*.txt, made by `make lock`), installed by uv without looking at dependencies.
# `make test` builds what does not depend on each other at once (-j: the venvs, the Debian
# packages and libbgpstream, the Rust decoder), then runs every test.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
AFVENV := .venv-airflow
AFBIN  := $(AFVENV)/bin
SHARED ?= ../shared/data
VENDOR ?= ../shared/vendor
DEMO   ?= data/demo
UV_VERSION := 0.13.9
LOCK   := requirements/dev.txt
AFLOCK := requirements/airflow.txt
BUILD_PINS := requirements/build.txt
JOBS   ?= 4
PROJECT_DIRS := cli common congruency dags dataplane ingest lake pipeline relationships reports runner selector synth

.PHONY: demo test check setup installs airflow-setup system-deps check-java s3a-jars clean bgpstream libbgpstream layers lint lock fast native-tests

# A venv with uv in it, then the lock file's packages (--no-deps: nothing is resolved) and
# the project itself, editable (its build requirements pinned too).
# Bytecode compiled at install (--compile-bytecode, and the project's own modules): each
# `congruency` process then imports without compiling (0.6 -> 0.4 s a start, measured; the
# suite starts hundreds), also where PYTHONDONTWRITEBYTECODE keeps Python from caching it.
define make_venv
	$(PYTHON) -m venv $(1)
	$(1)/bin/python -m pip install --quiet --disable-pip-version-check 'uv==$(UV_VERSION)'
	$(1)/bin/uv pip install --quiet --python $(1)/bin/python --no-deps --compile-bytecode -r $(2)
	$(1)/bin/uv pip install --quiet --python $(1)/bin/python --no-deps --build-constraints $(BUILD_PINS) -e .
	$(1)/bin/python -m compileall -q -j 0 -x '/(tests/fuzz|ingest/native|build|data)/' $(PROJECT_DIRS) >/dev/null
	touch $(1)/bin/.installed
endef

$(BIN)/.installed: pyproject.toml $(LOCK) $(BUILD_PINS)
	$(call make_venv,$(VENV),$(LOCK))

# Airflow (the `airflow` extra) lives in its own venv: its Spark provider pulls in
# pyspark-client, which shares pyspark's folder, so that venv pins one pyspark for both
# (pyproject.toml) while .venv keeps the newest. The DAG tests run there.
$(AFBIN)/.installed: pyproject.toml $(AFLOCK) $(BUILD_PINS)
	$(call make_venv,$(AFVENV),$(AFLOCK))

# The lock files, from pyproject.toml (needs the network; commit what it writes). pybgpstream
# is left out: it is compiled against libbgpstream (`bgpstream` below).
lock: $(BIN)/.installed
	$(BIN)/uv pip compile pyproject.toml --extra test --extra dev --extra bgpstream --no-emit-package pybgpstream \
	    --universal --python-version 3.11 -q -o $(LOCK)
	$(BIN)/uv pip compile pyproject.toml --extra airflow --extra test --extra bgpstream --no-emit-package pybgpstream \
	    --universal --python-version 3.11 -q -o $(AFLOCK)

# The native MRT decoder (ingest/native, Rust + pyo3, abi3): one wheel built with maturin,
# installed into every venv that runs the pipeline.
NATIVE_SRC := ingest/native/Cargo.toml ingest/native/Cargo.lock ingest/native/pyproject.toml $(wildcard ingest/native/src/*.rs)
CARGO_PATH := $(abspath $(BIN)):$(HOME)/.cargo/bin:$(PATH)
WHEELS := build/wheels

$(WHEELS)/.native: $(BIN)/.installed $(NATIVE_SRC)
	@PATH="$(CARGO_PATH)"; command -v cargo >/dev/null || { echo "error: cargo is not installed: the native MRT decoder needs a Rust toolchain (https://rustup.rs, or apt-get install cargo)" >&2; exit 1; }
	rm -f $(WHEELS)/congruency_mrt-*.whl
	PATH="$(CARGO_PATH)" $(BIN)/maturin build --quiet --release -m ingest/native/Cargo.toml -o $(WHEELS) \
	    -i $(BIN)/python >/dev/null
	touch $@

define install_native
	$(1)/bin/uv pip install --quiet --python $(1)/bin/python --no-deps --reinstall $(WHEELS)/congruency_mrt-*.whl
	touch $(1)/bin/.native
endef

$(BIN)/.native: $(BIN)/.installed $(WHEELS)/.native
	$(call install_native,$(VENV))

$(AFBIN)/.native: $(AFBIN)/.installed $(WHEELS)/.native
	$(call install_native,$(AFVENV))

setup: $(BIN)/.native
airflow-setup: $(AFBIN)/.native

check-java:
	@$(BIN)/python -c "from bgp_congruency.pipeline.spark_session import java_problem as p; import sys; m = p(); m and print('error: ' + m, file=sys.stderr); sys.exit(1 if m else 0)"

# Hadoop's S3A connector for Spark on an s3:// data dir (pipeline/s3a.py): three jars from
# Maven Central into the Maven cache (~/.m2/repository, or MAVEN_REPO_LOCAL), Maven's
# checksums strict, then each checked against the SHA-256 pinned there (a second run
# fetches nothing and checks again, about 2 s).
s3a-jars: $(BIN)/.installed system-deps
	@$(BIN)/python -m bgp_congruency.pipeline.s3a fetch >/dev/null

# Debian packages the tests use, and those libbgpstream's build needs, in one apt-get run
# (installed when missing; needs root, as on CI machines):
# bgpdump: the reference decoder (tests/test_native.py); java: the Spark engine;
# chromium: the reports in headless Chromium (tests/test_reports.py); iproute2, procps:
# network namespaces and MPTCP (tests/test_mptcp_kernel.py); shellcheck: the generated MPTCP
# scripts; scamper: `congruency trace`; maven: S3A's jars (s3a-jars); postgresql: the
# catalog tests' server; autotools and -dev packages: libbgpstream.
TEST_DEBS := bgpdump bzip2 openjdk-17-jre-headless chromium iproute2 procps shellcheck scamper maven postgresql
BGPSTREAM_DEBS := autoconf automake libtool libcurl4-openssl-dev zlib1g-dev libbz2-dev liblzma-dev libzstd-dev liblz4-dev
system-deps:
	@missing=""; command -v bgpdump >/dev/null || missing="$$missing bgpdump"; \
	command -v bzip2 >/dev/null || missing="$$missing bzip2"; \
	command -v java >/dev/null || missing="$$missing openjdk-17-jre-headless"; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	command -v ip >/dev/null && command -v ss >/dev/null || missing="$$missing iproute2"; \
	command -v sysctl >/dev/null || missing="$$missing procps"; \
	command -v shellcheck >/dev/null || missing="$$missing shellcheck"; \
	command -v scamper >/dev/null && command -v sc_warts2json >/dev/null || missing="$$missing scamper"; \
	command -v mvn >/dev/null || missing="$$missing maven"; \
	{ command -v initdb && command -v pg_ctl; } >/dev/null 2>&1 || [ -n "$$(ls /usr/lib/postgresql/*/bin/initdb 2>/dev/null)" ] \
	  || missing="$$missing postgresql"; \
	if [ -z "$(LIBBGPSTREAM_PREFIX)" ]; then for p in $(BGPSTREAM_DEBS); do \
	  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; fi; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian packages:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "error: the tests need Debian packages:$$missing (sudo apt-get install$$missing)" >&2; exit 1; fi; \
	fi

# The pybgpstream backend: CAIDA's libbgpstream and wandio built from the unmodified sources
# in $(VENDOR) into $(BGPSTREAM_BUILD) (cached: a second run does nothing), then pybgpstream
# from PyPI compiled against it into .venv and .venv-airflow. LIBBGPSTREAM_PREFIX=/usr (or
# wherever CAIDA's packages installed it) uses a system libbgpstream instead of building one.
BGPSTREAM_BUILD := $(abspath build/bgpstream)
LIBBGPSTREAM_PREFIX ?=
BGPSTREAM_PREFIX = $(or $(LIBBGPSTREAM_PREFIX),$(BGPSTREAM_BUILD))
PYBGPSTREAM := pybgpstream==2.0.2

libbgpstream: system-deps
	@if [ -z "$(LIBBGPSTREAM_PREFIX)" ]; then bash ingest/backends/build_bgpstream.sh $(VENDOR) $(BGPSTREAM_BUILD); \
	elif [ ! -f "$(LIBBGPSTREAM_PREFIX)/include/bgpstream.h" ]; then \
	  echo "error: LIBBGPSTREAM_PREFIX=$(LIBBGPSTREAM_PREFIX): no include/bgpstream.h there" >&2; exit 1; fi

# One shell command: pybgpstream compiled against the prefix (no cache, reinstalled; its
# Python dependency, python-dateutil, is in the lock).
install_pybgpstream = CFLAGS="-I$(BGPSTREAM_PREFIX)/include" LDFLAGS="-L$(BGPSTREAM_PREFIX)/lib -Wl,-rpath,$(BGPSTREAM_PREFIX)/lib" \
	  $(1)/bin/uv pip install --quiet --python $(1)/bin/python --no-deps --no-cache --reinstall \
	    --build-constraints $(BUILD_PINS) '$(PYBGPSTREAM)' \
	  && { $(1)/bin/python -c "import pybgpstream" || { echo "error: pybgpstream does not import against $(BGPSTREAM_PREFIX)" >&2; exit 1; }; } \
	  && touch $(1)/.bgpstream

pybgpstream_stale = [ ! -f $(1)/.bgpstream ] || [ $(BGPSTREAM_PREFIX)/.built -nt $(1)/.bgpstream ] || ! $(1)/bin/python -c "import pybgpstream" 2>/dev/null

bgpstream: libbgpstream $(BIN)/.installed
	@if $(call pybgpstream_stale,$(VENV)); then $(call install_pybgpstream,$(VENV)); fi
	@if [ -x $(AFBIN)/python ] && $(call pybgpstream_stale,$(AFVENV)); then $(call install_pybgpstream,$(AFVENV)); fi

# The decoder's unit tests, compiled (they link libpython like the module does, through the venv's
# interpreter): while other parts download, not after.
native-tests: $(BIN)/.installed
	cd ingest/native && PATH="$(CARGO_PATH)" PYO3_PYTHON=$(abspath $(BIN)/python) cargo test --release --quiet --no-run

# Everything the tests need, the independent parts at once; each part's output whole (-O).
installs:
	@$(MAKE) --no-print-directory -j$(JOBS) -O $(BIN)/.native $(AFBIN)/.native libbgpstream native-tests
	@$(MAKE) --no-print-directory bgpstream check-java s3a-jars

# The main job end to end on the sample archive: the month 2026-07 from the 2026-07-30 14:00
# route-views2 + route-views6 RIBs (coverage threshold 0: the samples are truncated):
# ingest, compare (DuckDB, no Java), hints, the catalog's upkeep and reports. Re-running it skips
# what is done.
demo: setup
	$(BIN)/congruency run --month 2026-07 --days 30 --times 14:00 \
	    --collectors route-views2,route-views6 --archive-root $(SHARED)/archive --data-dir $(DEMO) \
	    --default-free-share 0

# The layer contract of docs/architecture.md (import-linter, [tool.importlinter] in
# pyproject.toml). lint-imports finds the package by its name, bgp_congruency, which the
# editable install's path hook does not show it: it reads the checkout through a link of
# that name in a temporary folder.
layers: $(BIN)/.installed
	@d=$$(mktemp -d) && ln -s "$(CURDIR)" "$$d/bgp_congruency" && \
	  (cd "$$d" && PYTHONPATH="$$d" "$(abspath $(BIN))/lint-imports" --no-cache "$(CURDIR)/pyproject.toml" > "$$d/out"); \
	  rc=$$?; if [ $$rc -eq 0 ]; then tail -n 4 "$$d/out"; else cat "$$d/out"; fi; rm -rf "$$d"; exit $$rc

lint: $(BIN)/.installed
	$(BIN)/ruff check .

# The loop to check a change with: no JVM, no network namespaces, no Chromium, nothing slow.
FAST := not spark and not kernel and not browser and not slow
fast: setup
	CONGRUENCY_SHARED_DATA=$(abspath $(SHARED)) $(BIN)/python -m pytest -q -m "$(FAST)"

# Before a commit (its budget: 90 s with the Rust build warm; docs/testing.md): the lint, the layers, the decoder's
# unit tests and the fast loop (the generated docs' tests among it).
check: setup
	$(BIN)/ruff check .
	@$(MAKE) --no-print-directory layers
	cd ingest/native && PATH="$(CARGO_PATH)" PYO3_PYTHON=$(abspath $(BIN)/python) cargo test --release --quiet
	CONGRUENCY_SHARED_DATA=$(abspath $(SHARED)) $(BIN)/python -m pytest -q -m "$(FAST)"

# Test processes (pytest-xdist): one per core on the 2-core CI machine; each takes whole
# files (--dist loadfile: a file's module fixtures are built once; the session's computed
# months are built once for both, tests/conftest.py `_once`), the longest first
# (conftest.LONGEST_FIRST; --no-loadscope-reorder keeps that order: xdist would hand out the
# files with the most tests first, and one of the two longest started last). Not --dist loadgroup: with
# pytest 9.2, xdist 3.8 cannot tag a test's group (it writes Item._nodeid, which pytest 9.2
# no longer reads), so every test went to whichever worker was free.
TEST_WORKERS ?= 2

# Everything: the lint and the layers, the Rust decoder's own unit tests (framing, AS path
# segments, ADD-PATH, AS4_PATH merge, text forms, parallel bzip2), then the whole suite in
# .venv with the DAG tests in .venv-airflow beside it (a third process: the suite's workers
# often wait on a subprocess or a JVM; its output follows the suite's, and either failing
# fails the target).
DAG_LOG := build/test-dag.log
test: installs
	$(BIN)/ruff check .
	@$(MAKE) --no-print-directory layers
	cd ingest/native && PATH="$(CARGO_PATH)" PYO3_PYTHON=$(abspath $(BIN)/python) cargo test --release --quiet
	@mkdir -p build; echo "tests/test_dag.py runs in .venv-airflow beside the suite (its output: $(DAG_LOG), shown below)"
	@CONGRUENCY_SHARED_DATA=$(abspath $(SHARED)) $(AFBIN)/python -m pytest -q -p no:cacheprovider \
	    --basetemp=build/pytest-dag tests/test_dag.py >$(DAG_LOG) 2>&1 & dag=$$!; \
	trap 'kill $$dag 2>/dev/null' INT TERM; \
	echo "CONGRUENCY_SHARED_DATA=$(abspath $(SHARED)) $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder"; \
	CONGRUENCY_SHARED_DATA=$(abspath $(SHARED)) $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder; \
	main=$$?; wait $$dag; af=$$?; \
	echo "== tests/test_dag.py in .venv-airflow (exit $$af)"; cat $(DAG_LOG); \
	test $$main -eq 0 -a $$af -eq 0

clean:
	rm -rf $(VENV) $(AFVENV) data build *.egg-info
