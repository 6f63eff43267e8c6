"""`make chart`: the chart packaged by Helm (helm-python-sdk's `package`) into DIR/gpu-admission-<version>.tgz.

    python -m tools.package_chart [DIR]   (default: dist)

The chart's version and appVersion are the package's (pyproject.toml); the archive is refused if they
disagree, so that what is released says one version everywhere."""
from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import helm_python
import yaml

REPO = Path(__file__).resolve().parents[1]
CHART = REPO / "charts" / "gpu-admission"


def project_version() -> str:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]


def package(destination: Path) -> Path:
    version = project_version()
    meta = yaml.safe_load((CHART / "Chart.yaml").read_text(encoding="utf-8"))
    if (meta["version"], meta["appVersion"]) != (version, version):
        raise SystemExit(f"charts/gpu-admission/Chart.yaml says version {meta['version']}, appVersion "
                         f"{meta['appVersion']}; pyproject.toml says {version}: make them the same")
    destination.mkdir(parents=True, exist_ok=True)
    return Path(helm_python.package(str(CHART), destination=str(destination)))


def main(argv: list[str]) -> int:
    archive = package(Path(argv[0]) if argv else REPO / "dist")
    print(archive)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
