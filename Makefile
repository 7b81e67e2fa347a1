# The two quickstart commands (README): `make demo` and `make test`. Both install what they
# need: a venv in .venv with the package and its Python dependencies, and for the tests the
# Debian packages they use (bgpdump; Java for Spark if missing).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
SHARED ?= ../shared/data
DEMO   ?= data/demo

.PHONY: demo test setup airflow-setup system-deps check-java clean bgpstream

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

# The native MRT decoder (ingest/native, Rust + pyo3): built into the venv with maturin.
NATIVE_SRC := ingest/native/Cargo.toml ingest/native/Cargo.lock ingest/native/pyproject.toml $(wildcard ingest/native/src/*.rs)
CARGO_PATH := $(abspath $(BIN)):$(HOME)/.cargo/bin:$(PATH)

# One recipe for every venv that runs the pipeline (.venv, .venv-airflow); cargo reuses
# ingest/native/target, so the second build is quick.
define build_native
	@PATH="$(CARGO_PATH)"; command -v cargo >/dev/null || { echo "error: cargo is not installed: the native MRT decoder needs a Rust toolchain (https://rustup.rs, or apt-get install cargo)" >&2; exit 1; }
	$(1)/pip install --quiet 'maturin>=1.5,<2'
	PATH="$(CARGO_PATH)" $(1)/pip install --quiet --no-build-isolation ./ingest/native
	touch $(1)/.native
endef

$(BIN)/.native: $(BIN)/.installed $(NATIVE_SRC)
	$(call build_native,$(BIN))

setup: $(BIN)/.native

check-java:
	@$(BIN)/python -c "from bgp_congruency.pipeline.spark_session import java_problem as p; import sys; m = p(); m and print('error: ' + m, file=sys.stderr); sys.exit(1 if m else 0)"

# Debian packages the tests use; installed when missing (needs root, as on CI machines).
# chromium: the report tests load the HTML reports in headless Chromium (tests/test_reports.py);
# shellcheck: the generated MPTCP scripts are checked with it (tests/test_mptcp_kernel.py);
# scamper: `congruency trace` runs it and reads its warts files (tests/test_trace.py).
system-deps:
	@missing=""; command -v bgpdump >/dev/null || missing="$$missing bgpdump"; \
	command -v bzip2 >/dev/null || missing="$$missing bzip2"; \
	command -v java >/dev/null || missing="$$missing openjdk-17-jre-headless"; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	command -v ip >/dev/null && command -v ss >/dev/null || missing="$$missing iproute2"; \
	command -v sysctl >/dev/null || missing="$$missing procps"; \
	command -v shellcheck >/dev/null || missing="$$missing shellcheck"; \
	command -v scamper >/dev/null && command -v sc_warts2json >/dev/null || missing="$$missing scamper"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian packages:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "error: the tests need Debian packages:$$missing (sudo apt-get install$$missing)" >&2; exit 1; fi; \
	fi

# The main job end to end on the sample archive: the month 2026-07 from the 2026-07-30 14:00
# route-views2 + route-views6 RIBs (coverage threshold 0: the samples are truncated):
# ingest, compare (DuckDB, no Java), hints, the catalog's upkeep and reports. Re-running it skips
# what is done.
demo: setup
	$(BIN)/congruency run --month 2026-07 --days 30 --times 14:00 \
	    --collectors route-views2,route-views6 --archive-root $(SHARED)/archive --data-dir $(DEMO) \
	    --default-free-share 0

# Airflow (the `airflow` extra) lives in its own venv: its Spark provider pulls in
# pyspark-client, which shares pyspark's folder, so that venv pins one pyspark for both
# (pyproject.toml) while .venv keeps the newest. The DAG tests run there.
AFVENV := .venv-airflow
AFBIN  := $(AFVENV)/bin

$(AFBIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(AFVENV)
	$(AFBIN)/pip install --quiet --upgrade pip
	$(AFBIN)/pip install --quiet -e '.[airflow,test]'
	touch $@

$(AFBIN)/.native: $(AFBIN)/.installed $(NATIVE_SRC)
	$(call build_native,$(AFBIN))

airflow-setup: $(AFBIN)/.native

# The pybgpstream backend: CAIDA's libbgpstream and wandio built from the unmodified sources
# in $(VENDOR) into $(BGPSTREAM_BUILD) (cached: a second run does nothing), then pybgpstream
# from PyPI compiled against it into .venv (and .venv-airflow when it exists: `make test`
# makes it first). LIBBGPSTREAM_PREFIX=/usr (or wherever
# CAIDA's packages installed it) uses a system libbgpstream instead of building one.
VENDOR ?= ../shared/vendor
BGPSTREAM_BUILD := $(abspath build/bgpstream)
LIBBGPSTREAM_PREFIX ?=
BGPSTREAM_PREFIX = $(or $(LIBBGPSTREAM_PREFIX),$(BGPSTREAM_BUILD))
BGPSTREAM_DEBS := autoconf automake libtool libcurl4-openssl-dev zlib1g-dev libbz2-dev liblzma-dev libzstd-dev liblz4-dev

# One shell command (it runs inside the recipe's `if`): compiled against this prefix
# (no wheel cache, reinstalled), then its Python dependencies (python-dateutil).
install_pybgpstream = CFLAGS="-I$(BGPSTREAM_PREFIX)/include" LDFLAGS="-L$(BGPSTREAM_PREFIX)/lib -Wl,-rpath,$(BGPSTREAM_PREFIX)/lib" \
	  $(1)/pip install --quiet --no-cache-dir --force-reinstall --no-deps 'pybgpstream>=2.0.2,<3' \
	  && $(1)/pip install --quiet 'pybgpstream>=2.0.2,<3' \
	  && { $(1)/python -c "import pybgpstream" || { echo "error: pybgpstream does not import against $(BGPSTREAM_PREFIX)" >&2; exit 1; }; } \
	  && touch $(1)/.bgpstream

bgpstream: setup
	@if [ -z "$(LIBBGPSTREAM_PREFIX)" ]; then \
	  missing=""; for p in $(BGPSTREAM_DEBS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	  if [ -n "$$missing" ] && command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian packages to build libbgpstream:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; fi; \
	  bash ingest/backends/build_bgpstream.sh $(VENDOR) $(BGPSTREAM_BUILD); \
	elif [ ! -f "$(LIBBGPSTREAM_PREFIX)/include/bgpstream.h" ]; then \
	  echo "error: LIBBGPSTREAM_PREFIX=$(LIBBGPSTREAM_PREFIX): no include/bgpstream.h there" >&2; exit 1; fi
	@if [ ! -f $(BIN)/.bgpstream ] || [ $(BGPSTREAM_PREFIX)/.built -nt $(BIN)/.bgpstream ] || ! $(BIN)/python -c "import pybgpstream" 2>/dev/null; then \
	  $(call install_pybgpstream,$(BIN)); fi
	@if [ -x $(AFBIN)/python ] && { [ ! -f $(AFBIN)/.bgpstream ] || [ $(BGPSTREAM_PREFIX)/.built -nt $(AFBIN)/.bgpstream ] || ! $(AFBIN)/python -c "import pybgpstream" 2>/dev/null; }; then \
	  $(call install_pybgpstream,$(AFBIN)); fi

# The Rust decoder's own unit tests (framing, AS path segments, ADD-PATH, AS4_PATH merge) run
# first: they link libpython like the module does, through the venv's interpreter.
test: setup system-deps check-java airflow-setup bgpstream
	cd ingest/native && PATH="$(CARGO_PATH)" PYO3_PYTHON=$(abspath $(BIN)/python) cargo test --release --quiet
	CONGRUENCY_SHARED_DATA=$(abspath $(SHARED)) $(BIN)/python -m pytest -q
	CONGRUENCY_SHARED_DATA=$(abspath $(SHARED)) $(AFBIN)/python -m pytest -q -p no:cacheprovider tests/test_dag.py

clean:
	rm -rf $(VENV) $(AFVENV) data build *.egg-info
