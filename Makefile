PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# checkov pins packaging<24 and python-dateutil<3, which pytest and kubernetes refuse: it gets a
# virtualenv of its own, which the tests call (tests/chart/test_checkov.py).
CHECKOV_VENV := .venv-checkov
CHECKOV_STAMP := $(CHECKOV_VENV)/.installed
DIST := dist
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
# The files the lock pins (their hashes checked) and the build backend: what the install tests and `make image`
# install from, with no index (tests/install), so that neither reaches PyPI.
WHEELHOUSE := build/wheelhouse
WHEELHOUSE_STAMP := $(WHEELHOUSE)/.complete
IMAGE := $(DIST)/gpu-admission-$(VERSION).oci.tar

.PHONY: install wheelhouse wheelhouse-arm64 image release release-check tools test lint e2e e2e-cluster run bench certs schema docs messages lock chart clean intree

# The runtime dependencies at the lock's versions first (what the image runs), then the project and
# its test tools.
$(STAMP): pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --require-hashes -r requirements.lock
	$(BIN)/pip install --quiet -e '.[server,test]'
	touch $(STAMP)

$(CHECKOV_STAMP):
	$(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/pip install --quiet --upgrade pip
	$(CHECKOV_VENV)/bin/pip install --quiet 'checkov>=3.2'
	touch $(CHECKOV_STAMP)

install: $(STAMP) $(CHECKOV_STAMP)

$(WHEELHOUSE_STAMP): requirements.lock pyproject.toml | $(STAMP)
	$(BIN)/pip download --quiet --disable-pip-version-check --require-hashes --no-deps -r requirements.lock \
		--dest $(WHEELHOUSE)
	$(BIN)/pip download --quiet --disable-pip-version-check --no-deps 'setuptools>=77' --dest $(WHEELHOUSE)
	touch $@

wheelhouse: $(WHEELHOUSE_STAMP)

# The lock's aarch64 files, for the arm64 image: pip downloads for that platform (glibc 2.17 to 2.36, bookworm's),
# each file checked against the lock's hashes, which pip-compile took from every file of each version (the amd64
# and aarch64 wheels alike); the build backend is pure Python, copied.
WHEELHOUSE_ARM64 := build/wheelhouse-arm64
WHEELHOUSE_ARM64_STAMP := $(WHEELHOUSE_ARM64)/.complete
$(WHEELHOUSE_ARM64_STAMP): requirements.lock | $(WHEELHOUSE_STAMP)
	$(BIN)/pip download --quiet --disable-pip-version-check --require-hashes --no-deps --only-binary=:all: \
		--implementation cp --python-version 3.11 --abi cp311 \
		$(foreach glibc,17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36,--platform manylinux_2_$(glibc)_aarch64) \
		--platform manylinux2014_aarch64 -r requirements.lock --dest $(WHEELHOUSE_ARM64)
	cp $(WHEELHOUSE)/setuptools-*.whl $(WHEELHOUSE_ARM64)/
	touch $@

wheelhouse-arm64: $(WHEELHOUSE_ARM64_STAMP)

# The Dockerfile built with buildah, no registry needed (tools/image.sh says how): dist/gpu-admission-<version>.oci.tar,
# holding docker.io/library/gpu-admission:<version>. Rebuilt when what goes into the image changes. buildah's layers and
# the Debian bases are kept in build/containers (CONTAINERS_DIR=<folder> in the environment keeps them elsewhere).
IMAGE_INPUTS := Dockerfile .dockerignore requirements.lock pyproject.toml README.md tools/image.sh \
		$(shell find webhook -type f -not -name '*.py[co]' 2>/dev/null)
$(IMAGE): $(IMAGE_INPUTS) $(WHEELHOUSE_STAMP)
	tools/image.sh $(VERSION) $@ $(WHEELHOUSE) >/dev/null

image: $(IMAGE)
	@echo $(IMAGE)

# The arm64 image (its virtualenv built natively; only its Debian base's packages are configured under emulation:
# tools/image.sh, tools/binfmt.sh), and the image index of both that a release publishes.
IMAGE_ARM64 := $(DIST)/gpu-admission-$(VERSION)-arm64.oci.tar
IMAGE_INDEX := $(DIST)/gpu-admission-$(VERSION)-index.oci.tar
$(IMAGE_ARM64): $(IMAGE_INPUTS) tools/binfmt.sh $(WHEELHOUSE_ARM64_STAMP)
	tools/image.sh $(VERSION) $@ $(WHEELHOUSE_ARM64) arm64 >/dev/null
$(IMAGE_INDEX): $(IMAGE) $(IMAGE_ARM64) tools/image_index.py
	SOURCE_DATE_EPOCH=$${SOURCE_DATE_EPOCH:-$$(git log -1 --format=%ct 2>/dev/null || echo 0)} \
		$(BIN)/python -m tools.image_index $@ $(IMAGE) $(IMAGE_ARM64)

# Everything a release publishes, in dist/release (tools/release.py says what and how it stays reproducible): the
# wheel and sdist (twine-checked), the image index's OCI archive (amd64 and arm64), the chart package, each image's
# CycloneDX SBOM and SHA256SUMS. .github/workflows/release.yaml runs this, then publishes and signs.
RELEASE_DIR := $(DIST)/release
release: $(STAMP) $(WHEELHOUSE_STAMP) $(IMAGE_INDEX)
	$(BIN)/python -m tools.release $(RELEASE_DIR) $(IMAGE_INDEX) amd64=$(IMAGE)=$(WHEELHOUSE) \
		arm64=$(IMAGE_ARM64)=$(WHEELHOUSE_ARM64)

# What `make release` wrote, checked (tests/release): checksums, the packages, the image index, the SBOMs against the
# images and the lock, a second run's bytes, and the arm64 image's entry point under emulation. Not part of
# `make e2e` (the arm64 build under emulation alone takes longer than the e2e's budget); .ci/run runs it.
release-check: release
	$(BIN)/pytest -m release tests/release

test: install wheelhouse
	$(BIN)/pytest

# Configured in pyproject.toml: mypy (strict on webhook/policy and webhook/objects), ruff, import-linter.
lint: $(STAMP)
	$(BIN)/ruff check webhook tests bench tools
	$(BIN)/mypy
	$(BIN)/lint-imports

# The image as built (tests/image: read, then run under runc) and the suite through a real control plane
# (tests/e2e): builds kube-apiserver, kube-controller-manager, kubectl,
# kube-scheduler, the kubelet and etcd from the pinned Go modules when missing (tests/e2e/.bin/,
# E2E_KUBERNETES=1.34|1.37) and the node's pause and probe images (tests/e2e/.images/), starts them on loopback
# and a bridge of this machine, runs tests/e2e, stops everything. E2E_ARGS go to pytest (e.g. -k denial,
# --update-golden).
e2e: $(STAMP) image
	$(BIN)/python tests/e2e/build.py
	$(BIN)/python tests/e2e/images.py
	$(BIN)/pytest -m e2e tests/e2e tests/image $(E2E_ARGS)

# The same control plane kept running for manual use: prints the KUBECONFIG line, Ctrl-C stops it.
e2e-cluster: $(STAMP)
	$(BIN)/python tests/e2e/cluster.py up $(or $(DIR),build/e2e-cluster)

run: $(STAMP)
	$(BIN)/gpu-admission serve

certs: $(STAMP)
	$(BIN)/gpu-admission certs --out certs

bench: $(STAMP)
	$(BIN)/python bench/decision.py

# The rule-id table (webhook/rules.py) from the rules' definitions, then the policy schema's rule-id enum from it;
# the chart's values.schema.json embeds the policy's JSON Schema (webhook/config/policy.schema.json).
# tests/policy/test_registry.py and tests/policy/test_schema.py fail until this is run after adding a rule, or a
# change to a rule's default action or to either schema.
schema: $(STAMP)
	$(BIN)/python -m tools.rule_ids webhook/rules.py
	$(BIN)/python -c 'import sys; from webhook.config.schema import main; sys.exit(main(sys.argv[1:]))' \
		charts/gpu-admission/values.schema.json

# The rules index of docs/rules/README.md, from the rules' definitions (webhook/policy/definitions.py); tests/test_rule_docs.py fails until this
# is run after a change to a rule's entry.
docs: $(STAMP)
	$(BIN)/python -m tools.rule_docs docs/rules/README.md

# The message catalogues (webhook/locale): the msgids that T(...) and N_(...) mark in webhook/ into
# gpu_admission.pot, each language's .po updated from it (a new msgid comes in untranslated, which
# tests/locale/test_catalogue.py names), then compiled into the .mo the package ships and reads. The
# creation date is dropped, so that running it again changes nothing.
messages: $(STAMP)
	$(BIN)/pybabel -q extract -F babel.cfg -k T -k N_ -k Definition:2 --no-location --sort-output \
		-o webhook/locale/gpu_admission.pot webhook
	$(BIN)/pybabel -q update -i webhook/locale/gpu_admission.pot -d webhook/locale -D gpu_admission \
		--no-fuzzy-matching --ignore-obsolete
	sed -i 's/^"POT-Creation-Date: .*/"POT-Creation-Date: 2026-12-01 00:00+0000\\n"/' \
		webhook/locale/gpu_admission.pot webhook/locale/*/LC_MESSAGES/gpu_admission.po
	$(BIN)/pybabel -q compile -d webhook/locale -D gpu_admission

# The runtime dependencies the image installs, pinned with their hashes (Dockerfile: --require-hashes).
# Run it after changing `dependencies` in pyproject.toml; tests/test_release.py says when it is due.
lock: $(STAMP)
	$(BIN)/pip-compile --quiet --generate-hashes --strip-extras --allow-unsafe --no-emit-index-url --no-emit-find-links \
		--extra server --output-file requirements.lock pyproject.toml

# The chart as a versioned archive (helm package, through helm-python-sdk): dist/gpu-admission-<version>.tgz
chart: $(STAMP)
	$(BIN)/python -m tools.package_chart $(DIST)

clean:
	rm -rf $(VENV) $(CHECKOV_VENV) $(DIST) build *.egg-info .mypy_cache .ruff_cache

# The chart's in-tree policies: the export of the chart's default policy, and the policy they were exported from,
# written by the function `gpu-admission export --chart-values` uses (templates/intree.yaml refuses inTree for a
# release whose policy differs; tests/chart/test_intree.py fails until this is run after a change to the
# generator, the default policy or the chart's policy values).
intree: $(STAMP)
	$(BIN)/python -m tools.intree_policy charts/gpu-admission/files/intree
