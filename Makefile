PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
COMPILED := build/compiled

.PHONY: install test e2e e2e-cluster run bench certs compiled clean

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

# The suite through a real control plane (tests/e2e): builds kube-apiserver, kube-controller-manager, kubectl
# and etcd from the pinned Go modules when missing (tests/e2e/.bin/, E2E_KUBERNETES=1.34|1.37), starts them
# on loopback, runs tests/e2e, stops everything. E2E_ARGS go to pytest (e.g. -k denial, --update-golden).
e2e: $(STAMP)
	$(BIN)/python tests/e2e/build.py
	$(BIN)/pytest -m e2e tests/e2e $(E2E_ARGS)

# The same control plane kept running for manual use: prints the KUBECONFIG line, Ctrl-C stops it.
e2e-cluster: $(STAMP)
	$(BIN)/python tests/e2e/cluster.py up $(or $(DIR),build/e2e-cluster)

run: $(STAMP)
	$(BIN)/gpu-admission serve

certs: $(STAMP)
	$(BIN)/gpu-admission certs --out certs

bench: $(STAMP)
	$(BIN)/python bench/decision.py

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache
