# syntax=docker/dockerfile:1
# gpu-admission: the admission webhook image.
#   docker build -t gpu-admission:dev .
# The build stage installs the project from its own metadata (pyproject.toml) into a virtualenv; the
# runtime stage copies only that virtualenv onto the same slim image (the virtualenv's interpreter is
# /usr/local/bin/python3.11 in both): no pip, no pip cache, no build files. Everything is precompiled, so the image runs with a read-only root filesystem (the chart mounts
# an emptyDir at /tmp for gunicorn's worker heartbeat files).

FROM python:3.11-slim-bookworm AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/gpu-admission \
    PATH=/opt/gpu-admission/bin:$PATH
WORKDIR /src
RUN python -m venv "$VIRTUAL_ENV"
# The runtime dependencies from requirements.lock (`make lock` compiles it from pyproject.toml), every
# file checked against its hash, so that two builds install the same bytes; then the project itself
# with no dependency resolution of its own (only its build backend, setuptools, comes from the index).
COPY requirements.lock pyproject.toml README.md ./
COPY webhook ./webhook
RUN pip install --no-cache-dir --require-hashes --no-deps -r requirements.lock \
 && pip install --no-cache-dir --no-deps . \
 && python -m compileall -q "$VIRTUAL_ENV" \
 && pip uninstall --yes pip

FROM python:3.11-slim-bookworm AS runtime
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
