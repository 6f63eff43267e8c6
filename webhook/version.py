"""The package version, as installed (pip's metadata): one value for `--version`, `/readyz` and the
`gpu_admission_build_info` metric, and the release whose docs a message links to."""
from __future__ import annotations

from functools import cache
from importlib import metadata

DISTRIBUTION = "gpu-admission"
REPOSITORY = "https://github.com/gpu-admission/gpu-admission"
UNKNOWN = "0+unknown"


@cache
def package_version() -> str:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return UNKNOWN


def docs_ref(version: str | None = None) -> str:
    """The git ref whose docs describe `version` (the installed one by default): its release tag, v<version>.
    A message must explain the rules this install enforces, which `main` may already have changed; a source
    tree that was never installed has no release, and links to main."""
    version = package_version() if version is None else version
    return "main" if version == UNKNOWN else f"v{version}"


def docs_base_url(version: str | None = None) -> str:
    """The default `docsBaseUrl`: the rule pages (docs/rules) of the installed release."""
    return f"{REPOSITORY}/blob/{docs_ref(version)}/docs/rules"
