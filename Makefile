PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install test run bench certs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(BIN)/pytest

run: $(STAMP)
	$(BIN)/gpu-admission serve

certs: $(STAMP)
	$(BIN)/gpu-admission certs --out certs

bench: $(STAMP)
	$(BIN)/python bench/decision.py

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .ruff_cache
