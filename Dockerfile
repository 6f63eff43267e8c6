# syntax=docker/dockerfile:1
# gpu-admission: the admission webhook image.
#   docker build -t gpu-admission:dev .
# (`make image` builds this same file with buildah, without a registry: docs/deployment.md#the-image.)
# Debian bookworm's slim image with Debian's own Python 3.11: the interpreter and its security updates come
# from the Debian archive, a plain mirror any build machine can reach. A base stage holds only the interpreter;
# the build stage adds python3-venv and installs the project from its own metadata (pyproject.toml) into a
# virtualenv; the runtime stage is the base stage plus that virtualenv (whose interpreter, /usr/bin/python3,
# is the same file in both): no pip, no pip cache, no build files, no apt lists. Everything is precompiled,
# so the image runs with a read-only root filesystem (the chart mounts an emptyDir at /tmp for gunicorn's
# worker heartbeat files).

FROM debian:bookworm-slim AS python
# python3 brings python3.11 and its standard library at the archive's current security release.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3=3.11.2-1+b1 \
 && rm -rf /var/lib/apt/lists/*

FROM python AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/gpu-admission \
    PATH=/opt/gpu-admission/bin:$PATH
# venv and ensurepip's pip wheel: only here, never in the runtime stage.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3-venv=3.11.2-1+b1 \
 && rm -rf /var/lib/apt/lists/*
# pip installs from PyPI, unless the build is given a directory of wheels and no index (PIP_NO_INDEX=1
# PIP_FIND_LINKS=...: `make image` builds so, with no network to PyPI). Unset, they change nothing.
ARG PIP_NO_INDEX
ARG PIP_FIND_LINKS
WORKDIR /src
RUN python3 -m venv "$VIRTUAL_ENV"
# The runtime dependencies from requirements.lock (`make lock` compiles it from pyproject.toml), every
# file checked against its hash, so that two builds install the same bytes; then the project itself
# with no dependency resolution of its own (only its build backend, setuptools, comes from the index).
# The bytecode records a hash of each source, not its modification time (the time of this build): two builds of
# the same sources write the same .pyc files (the root filesystem is read-only, so no source changes under them).
COPY requirements.lock pyproject.toml README.md ./
COPY webhook ./webhook
RUN pip install --no-cache-dir --require-hashes --no-deps -r requirements.lock \
 && pip install --no-cache-dir --no-deps . \
 && python -m compileall -q --invalidation-mode unchecked-hash "$VIRTUAL_ENV" \
 && pip uninstall --yes pip

FROM python AS runtime
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    VIRTUAL_ENV=/opt/gpu-admission \
    PATH=/opt/gpu-admission/bin:$PATH
# The version is pyproject.toml's, as are the chart's version and appVersion (tests/test_release.py).
LABEL org.opencontainers.image.title="gpu-admission" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.description="Kubernetes admission webhook for NVIDIA GPU node cohorts" \
      org.opencontainers.image.source="https://github.com/gpu-admission/gpu-admission" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /opt/gpu-admission /opt/gpu-admission
WORKDIR /
# A numeric user (not in /etc/passwd) so that runAsNonRoot can verify it; the chart runs as the same.
USER 65532:65532
EXPOSE 8443
ENTRYPOINT ["gunicorn", "--config", "python:webhook.server.gunicorn_conf", "webhook.server.wsgi:app"]
