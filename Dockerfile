# syntax=docker/dockerfile:1
# gpu-admission: the admission webhook image, for linux/amd64 and linux/arm64.
#   docker build -t gpu-admission:dev .
#   docker buildx build --platform linux/arm64 -t gpu-admission:dev-arm64 .
# (`make image` builds this same file with buildah, without a registry: docs/deployment.md#the-image.)
# Debian bookworm's slim image with Debian's own Python 3.11: the interpreter and its security updates come
# from the Debian archive, a plain mirror any build machine can reach. The runtime stage is a base holding only
# the interpreter plus the virtualenv the build stage made: no pip, no setuptools, no pip cache, no build files, no
# apt lists. Everything is precompiled, so the image runs with a read-only root filesystem (the chart mounts an
# emptyDir at /tmp for gunicorn's worker heartbeat files).
#
# The build stage runs on the build machine's own platform (BUILDPLATFORM) whatever the image's (TARGETARCH): it
# installs the lock's wheels for the image's platform, so an arm64 image built on amd64 emulates nothing but the
# python stage (the arm64 interpreter's install). `make image` replaces even that stage by a base holding the same
# python3 (`--build-context python=...`, tools/image.sh).
FROM debian:bookworm-slim AS python
# python3 brings python3.11 and its standard library at the archive's current security release.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3=3.11.2-1+b1 \
 && rm -rf /var/lib/apt/lists/*

FROM --platform=$BUILDPLATFORM debian:bookworm-slim AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/gpu-admission
# The same python3 as the image's (only its platform may differ), and venv with ensurepip's pip wheel: only here.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3=3.11.2-1+b1 python3-venv=3.11.2-1+b1 \
 && rm -rf /var/lib/apt/lists/*
# pip installs from PyPI, unless the build is given a directory of wheels and no index (PIP_NO_INDEX=1
# PIP_FIND_LINKS=...: `make image` builds so, with no network to PyPI). Unset, they change nothing.
ARG PIP_NO_INDEX
ARG PIP_FIND_LINKS
# The image's architecture (amd64, arm64), set by BuildKit and buildah from --platform (a builder that does not
# set it builds for its own machine).
ARG TARGETARCH
WORKDIR /src
COPY requirements.lock pyproject.toml README.md ./
COPY webhook ./webhook
# The image's virtualenv is made without pip, so it never holds an installer or setuptools; a second one, left in
# this stage, holds the pip that fills it. First the project's own wheel is built (pure Python; its build backend,
# setuptools, comes from the index). Then pip installs, for the image's platform (manylinux wheels for glibc up to
# bookworm's 2.36): the runtime dependencies from requirements.lock (`make lock` compiles it from pyproject.toml),
# every file checked against its hash, nothing resolved, then the project's wheel. --target writes into the
# virtualenv's site-packages and its bin and include folders (the scripts name its interpreter: --python), and the
# build's interpreter byte-compiles everything, again where an import during the build (pip runs on the
# virtualenv's interpreter) left a .pyc already (-f). The bytecode records a hash of each source, not its
# modification time (the time of this build): two builds of the same sources write the same .pyc files (the root
# filesystem is read-only, so no source changes under them).
RUN python3 -m venv --without-pip "$VIRTUAL_ENV" \
 && python3 -m venv installer \
 && installer/bin/pip wheel --no-deps --wheel-dir wheels . \
 && case "$TARGETARCH" in amd64) machine=x86_64 ;; arm64) machine=aarch64 ;; "") machine=$(uname -m) ;; \
      *) machine=$TARGETARCH ;; esac \
 && set -- --python "$VIRTUAL_ENV/bin/python3" install --no-deps --no-compile --only-binary=:all: \
 && for glibc in $(seq 5 36); do set -- "$@" --platform "manylinux_2_${glibc}_$machine"; done \
 && site="$VIRTUAL_ENV/lib/python3.11/site-packages" \
 && installer/bin/pip "$@" --target "$site" --require-hashes -r requirements.lock \
 && mv "$site"/bin/* "$VIRTUAL_ENV/bin/" && rmdir "$site/bin" \
 && installer/bin/pip "$@" --target "$site" wheels/gpu_admission-*.whl \
 && mv "$site"/bin/* "$VIRTUAL_ENV/bin/" && rmdir "$site/bin" \
 && if [ -d "$site/include" ]; then cp -a "$site/include/." "$VIRTUAL_ENV/include/" && rm -r "$site/include"; fi \
 && "$VIRTUAL_ENV/bin/python3" -m compileall -q -f -j 0 --invalidation-mode unchecked-hash "$VIRTUAL_ENV"

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
