"""What `make release` wrote in dist/release, read as a user and a registry read it (`make release-check`, after
`make release`): the checksums, the Python packages (metadata and extras, twine's check), the image index with the
single-architecture images unchanged, each SBOM against its image and the lock, and the same files again from a
second run of tools/release.py over the same inputs."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tarfile
import zipfile
from email.parser import HeaderParser
from pathlib import Path

import pytest

from tests.support import REPO
from tests.test_release import VERSION
from tools import sbom

pytestmark = [pytest.mark.slow, pytest.mark.release]

OUT = REPO / "dist" / "release"
ARCHIVES = {"amd64": REPO / "dist" / f"gpu-admission-{VERSION}.oci.tar",
            "arm64": REPO / "dist" / f"gpu-admission-{VERSION}-arm64.oci.tar"}
WHEELHOUSES = {"amd64": REPO / "build" / "wheelhouse", "arm64": REPO / "build" / "wheelhouse-arm64"}
FILES = [f"gpu_admission-{VERSION}-py3-none-any.whl", f"gpu_admission-{VERSION}.tar.gz",
         f"gpu-admission-{VERSION}.tgz", f"gpu-admission-{VERSION}.oci.tar",
         f"gpu-admission-{VERSION}.amd64.cdx.json", f"gpu-admission-{VERSION}.arm64.cdx.json"]


@pytest.fixture(scope="session")
def release() -> Path:
    missing = [name for name in [*FILES, "SHA256SUMS"] if not (OUT / name).is_file()]
    if missing:
        pytest.fail(f"dist/release lacks {', '.join(missing)}: run `make release` first", pytrace=False)
    return OUT


def test_sha256sums_covers_every_file_and_sha256sum_checks_it(release):
    listed = [line.split("  ", 1)[1] for line in (release / "SHA256SUMS").read_text().splitlines()]
    assert listed == sorted(FILES)
    assert sorted(p.name for p in release.iterdir()) == sorted([*FILES, "SHA256SUMS"])
    done = subprocess.run(["sha256sum", "--check", "--strict", "SHA256SUMS"], cwd=release, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_wheel_is_the_light_cli_with_its_extras_and_twine_accepts_both_packages(release):
    with zipfile.ZipFile(release / FILES[0]) as wheel:
        metadata = HeaderParser().parsestr(wheel.read(f"gpu_admission-{VERSION}.dist-info/METADATA").decode())
        names = wheel.namelist()
    assert metadata["Version"] == VERSION and metadata["License-Expression"] == "Apache-2.0"
    assert set(metadata.get_all("Provides-Extra")) >= {"cluster", "server"}
    requires = metadata.get_all("Requires-Dist")
    assert [r for r in requires if "extra ==" not in r and r.startswith(("kubernetes", "flask", "gunicorn"))] == []
    assert any(r.startswith("gunicorn") and 'extra == "server"' in r for r in requires)
    assert "webhook/locale/ja/LC_MESSAGES/gpu_admission.mo" in names and "webhook/config/default.yaml" in names
    assert not [n for n in names if n.startswith("tests/") or n.endswith(".pyc")]
    done = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", str(release / FILES[0]),
                           str(release / FILES[1])], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and done.stdout.count("PASSED") == 2, done.stdout + done.stderr


def _index(path: Path) -> tuple[dict, dict]:
    with tarfile.open(path) as tar:
        (top,) = json.loads(tar.extractfile("index.json").read())["manifests"]
        return top, json.loads(tar.extractfile("blobs/" + top["digest"].replace(":", "/")).read())


def test_the_image_index_holds_amd64_and_arm64_with_the_single_images_digests(release):
    top, index = _index(release / f"gpu-admission-{VERSION}.oci.tar")
    assert top["mediaType"] == index["mediaType"] == "application/vnd.oci.image.index.v1+json"
    assert top["annotations"]["org.opencontainers.image.ref.name"] == f"docker.io/library/gpu-admission:{VERSION}"
    platforms = {m["platform"]["architecture"]: m for m in index["manifests"]}
    assert set(platforms) == {"amd64", "arm64"}
    assert platforms["arm64"]["platform"].get("variant") == "v8"
    for arch, archive in ARCHIVES.items():
        (manifest, _), = sbom.manifests(archive)
        assert platforms[arch]["digest"] == manifest["_digest"], arch
    # skopeo, as the release workflow pushes it, reads both images from it
    done = subprocess.run(["skopeo", "inspect", "--raw", f"oci-archive:{release / FILES[3]}"], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0 and json.loads(done.stdout) == index, done.stderr


@pytest.mark.parametrize("arch", ["amd64", "arm64"])
def test_each_sbom_lists_every_locked_package_and_the_image_s_debian_packages(release, arch):
    bom = json.loads((release / f"gpu-admission-{VERSION}.{arch}.cdx.json").read_text())
    (manifest, config), = sbom.manifests(ARCHIVES[arch])
    assert config["architecture"] == arch
    assert bom["metadata"]["component"]["hashes"][0]["content"] == manifest["_digest"].split(":")[1]
    pins = sbom.lock_pins(REPO / "requirements.lock")
    python = {c["name"]: c for c in bom["components"] if c.get("purl", "").startswith("pkg:pypi/")}
    # the lock's packages and nothing else: no pip, no setuptools (the virtualenv is made without them)
    assert set(python) == set(pins) and not {"pip", "setuptools", "wheel"} & set(python)
    for name, (version, hashes) in pins.items():
        assert python[name]["version"] == version
        (digest,) = python[name]["hashes"]
        assert digest["content"] in hashes
        wheel = WHEELHOUSES[arch] / python[name]["properties"][0]["value"]
        assert hashlib.sha256(wheel.read_bytes()).hexdigest() == digest["content"]
    debian = {c["name"]: c for c in bom["components"] if c.get("purl", "").startswith("pkg:deb/")}
    assert {"python3.11", "libc6", "base-files", "libssl3"} <= set(debian)
    assert "python3-venv" not in debian and "python3-pip" not in debian  # the build stage's, not the image's
    assert all(f"arch={arch}" in c["purl"] or "arch=all" in c["purl"] for c in debian.values())
    assert len(debian) > 50


def test_a_second_run_over_the_same_inputs_writes_the_same_bytes(release, tmp_path):
    """The wheel, the sdist, the chart, the SBOMs and the index: SOURCE_DATE_EPOCH everywhere, the archives' gzip
    headers and members dated by it (tools/release.py). The images themselves are inputs here; docs/deployment.md
    says what of them is reproducible."""
    index = REPO / "dist" / f"gpu-admission-{VERSION}-index.oci.tar"
    done = subprocess.run([sys.executable, "-m", "tools.release", str(tmp_path / "again"), str(index),
                           *(f"{a}={ARCHIVES[a]}={WHEELHOUSES[a]}" for a in ARCHIVES)], cwd=REPO,
                          capture_output=True, text=True, timeout=1200, check=False)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "again" / "SHA256SUMS").read_text() == (release / "SHA256SUMS").read_text()
