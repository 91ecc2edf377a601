# Two commands do everything: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

.PHONY: install run test lint typecheck unit bench clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is required"'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(PY) -m cli.devstack

lint: $(STAMP)
	$(VENV)/bin/ruff check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy api workflows activities store core cli trust policy worker.py bench tests

unit: $(STAMP)
	$(VENV)/bin/pytest

test: lint typecheck unit

bench: $(STAMP)
	$(PY) -m bench.intake
	$(PY) -m bench.trust
	$(PY) -m bench.verify

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache
