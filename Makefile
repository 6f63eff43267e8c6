PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
COMPILED := build/compiled

.PHONY: install test run bench certs compiled schema clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# The suite runs twice: against the sources, then against the package as the container image builds it
# (its request path compiled with mypyc), so that both builds are known to behave the same.
test: $(STAMP)
	$(BIN)/pytest
	$(MAKE) compiled
	GPU_ADMISSION_TEST_BUILD=$(COMPILED) $(BIN)/pytest

# The package as the image installs it, unpacked into build/compiled (setup.py, [tool.gpu-admission]).
# From a clean build/: setuptools would package what an earlier build left in build/lib (a module
# compiled then but no longer listed, whose copy of the modules it imports is another group's).
compiled: $(STAMP)
	rm -rf build
	GPU_ADMISSION_COMPILE=1 $(BIN)/pip wheel --quiet --no-deps --no-build-isolation --wheel-dir build/wheel .
	$(BIN)/python -m zipfile -e build/wheel/gpu_admission-*.whl $(COMPILED)

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
	rm -rf $(VENV) build *.egg-info .mypy_cache
