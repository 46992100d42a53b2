# The two commands of the README: `make run` and `make test`. Both create .venv when it is
# missing and install exactly what requirements.lock pins; nothing is installed by hand.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
PIP := $(BIN)/python -m pip --quiet --disable-pip-version-check
# uv installs the lock (the version it pins) several times faster than pip: it fetches and unpacks in
# parallel, and compiles the bytecode on both cores (compiled, as pip does: nothing else writes it
# here, with PYTHONDONTWRITEBYTECODE set). uv reads no pip.conf: the folder of local wheels pip is
# pointed at (torch's CPU build on this machine) is handed to it.
UV := $(BIN)/uv
FIND_LINKS := $(or $(PIP_FIND_LINKS),$(shell $(PYTHON) -m pip config get global.find-links 2>/dev/null))
UV_INSTALL := $(UV) pip install --quiet --python $(BIN)/python --compile-bytecode $(addprefix --find-links ,$(FIND_LINKS))
# Runs started from the CLI are recorded where the UI (`make ui`) shows them.
export DAGSTER_HOME := $(CURDIR)/.dagster

.PHONY: install run test check fuzz browser lint format ui superset superset-stop docs eval bench lock clean

install: $(INSTALLED)

$(INSTALLED): requirements.lock pyproject.toml dagster.yaml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install "$$(grep '^uv==' requirements.lock)"
	$(UV_INSTALL) --requirement requirements.lock
	$(PIP) install --no-deps --no-build-isolation --editable .
	@mkdir -p $(DAGSTER_HOME) && ln -sf ../dagster.yaml $(DAGSTER_HOME)/dagster.yaml
	@touch $@

run: install
	$(BIN)/paperhouse run

# Every test, on both cores (pytest-xdist, a file's tests on one worker, so its module fixtures
# are made once; each worker starts one Spark session), the files in tests/conftest.py's order
# (--no-loadscope-reorder: xdist would otherwise order them by their number of tests), the shared
# builds made beside them from the start (tests/warehouses.py); pytest prints the 25 slowest.
# `make check` is the fast tier for the edit loop: no whole builds, no JVM, no browser (tests
# marked slow, spark or browser are left to `make test`).
test: install browser lint
	$(BIN)/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder

check: install
	$(BIN)/python -m pytest -n 2 --dist loadfile -m "not slow and not spark and not browser"

# Property-based tests of whole runs over many random input folders (tests/test_fuzz_folders.py):
# random, not the few repeatable folders `make test` tries; FUZZ_EXAMPLES of them. A folder that
# fails is kept in .hypothesis/ and tried first by the next `make fuzz`.
FUZZ_EXAMPLES ?= 40
fuzz: install
	HYPOTHESIS_PROFILE=fuzz PAPERHOUSE_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) \
	  $(BIN)/python -m pytest tests/test_fuzz_folders.py tests/test_topic_invariants.py -q --hypothesis-show-statistics

# ruff (format and check) for the Python, import-linter for the layers of src/paperhouse
# (pyproject.toml's [tool.importlinter]), sqlfluff for the dbt models; `make format` fixes what
# they can. The same hooks run on commit with pre-commit (.pre-commit-config.yaml).
LINTED := src orchestration tests
SQL := dbt_project/models dbt_project/tests dbt_project/macros
lint: install
	$(BIN)/ruff format --check $(LINTED)
	$(BIN)/ruff check $(LINTED)
	$(BIN)/lint-imports
	$(BIN)/sqlfluff lint $(SQL)

format: install
	$(BIN)/ruff format $(LINTED)
	$(BIN)/ruff check --fix $(LINTED)
	$(BIN)/sqlfluff fix $(SQL)

# The browser tests drive Debian's chromium (Playwright cannot download a browser here): installed
# when missing and this is root, else the exact command to run is printed.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian's chromium for the browser tests"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else \
	    echo "The browser tests need Debian's chromium: run 'sudo apt-get install -y chromium', then make test" >&2; \
	    exit 1; \
	  fi; }

ui: install
	$(BIN)/paperhouse ui

# Apache Superset on the warehouse with paperhouse's five dashboards (docs/bi.md): its own virtualenv
# (.superset-venv, from src/paperhouse/bi/superset_assets/requirements.lock), its config under
# data/superset, served on 127.0.0.1:$PAPERHOUSE_SUPERSET_PORT (8088); returns once it answers.
superset: install
	@test -f data/paperhouse.duckdb || $(BIN)/paperhouse run
	$(BIN)/paperhouse superset

superset-stop: install
	$(BIN)/paperhouse superset --stop

# The dbt docs site (descriptions, tests, lineage of every model) as one offline HTML file.
docs: install
	@test -f data/paperhouse.duckdb || $(BIN)/paperhouse run
	$(BIN)/paperhouse docs

# Quality reports: dedup precision and recall per variant kind on src/paperhouse/evaluation/gold/dedup_eval_set.jsonl;
# keyphrase F1, method-name precision and topic coherence beside baselines on the gold sets; then
# the real lists of ../shared/realdata (read in place), both halves, beside the plain tools, with
# the keyphrases of the embeddings option too (its embeddings take most of the added time).
eval: install
	$(BIN)/paperhouse eval-dedup
	$(BIN)/paperhouse eval-terms
	$(BIN)/paperhouse eval-real

# The whole pipeline at 10k and 100k synthetic abstracts beside its baselines, and the bundled
# seeds; writes data/bench/bench.json. `make bench BENCH_FLAGS=--million` adds 1M abstracts.
bench: install
	$(BIN)/paperhouse bench $(BENCH_FLAGS)

# Re-resolve pyproject.toml's ranges (with the dev extra) into requirements.lock.
lock:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/python -m pip --quiet install --upgrade pip wheel
	.lock-venv/bin/python -m pip --quiet install --editable '.[dev,spark,embeddings]'
	{ echo "# Generated by 'make lock' from pyproject.toml; 'make' installs exactly this."; \
	  .lock-venv/bin/python -m pip freeze --all --exclude-editable | grep -v '^pip=='; } > requirements.lock
	rm -rf .lock-venv

clean:
	rm -rf $(VENV) .superset-venv data .dagster dbt_project/target dbt_project/logs
