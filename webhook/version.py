"""The package version, as installed (pip's metadata): one value for `--version`, `/readyz` and the
`gpu_admission_build_info` metric."""
from __future__ import annotations

from importlib import metadata

DISTRIBUTION = "gpu-admission"


def package_version() -> str:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"
