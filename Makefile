PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install test run bench certs schema clean

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

# The chart's values.schema.json embeds the policy's JSON Schema (webhook/config/policy.schema.json);
# tests/policy/test_schema.py fails until this is run after a change to either.
schema: $(STAMP)
	$(BIN)/python -c 'import sys; from webhook.config.schema import main; sys.exit(main(sys.argv[1:]))' \
		charts/gpu-admission/values.schema.json

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .ruff_cache
