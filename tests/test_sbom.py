"""tools/sbom.py and tools/image_index.py on small OCI archives written here (a layer with dpkg's status and the
virtualenv's METADATA files, a lock and a wheelhouse of stand-in wheels): what the SBOM lists, what it refuses, that
it is deterministic, and the image index over two architectures. `make release-check` (tests/release) reads the real
release."""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest

from tools import image_index, sbom

STATUS = b"""Package: base-files
Status: install ok installed
Architecture: amd64
Version: 12.4+deb12u13

Package: libssl3
Status: install ok installed
Architecture: amd64
Source: openssl
Version: 3.0.17-1~deb12u3

Package: removed-one
Status: deinstall ok config-files
Architecture: amd64
Version: 1.0
"""
SITE = "opt/gpu-admission/lib/python3.11/site-packages"


def _tar(files: dict[str, bytes]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), mtime=0)


def _blob(blobs: dict[str, bytes], data: bytes) -> dict:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    blobs[digest] = data
    return {"digest": digest, "size": len(data)}


def oci_archive(path: Path, architecture: str, dists: dict[str, str], status: bytes = STATUS) -> Path:
    blobs: dict[str, bytes] = {}
    files = {"var/lib/dpkg/status": status, "etc/debian_version": b"12.13\n",
             "etc/os-release": b'ID=debian\nVERSION_ID="12"\n'}
    files.update({f"{SITE}/{n}-{v}.dist-info/METADATA": f"Name: {n}\nVersion: {v}\n".encode()
                  for n, v in dists.items()})
    layer = {"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", **_blob(blobs, _tar(files))}
    config = {"mediaType": "application/vnd.oci.image.config.v1+json",
              **_blob(blobs, json.dumps({"architecture": architecture, "os": "linux"}).encode())}
    manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                           "config": config, "layers": [layer]}).encode()
    descriptor = {"mediaType": "application/vnd.oci.image.manifest.v1+json", **_blob(blobs, manifest),
                  "annotations": {"org.opencontainers.image.ref.name": "docker.io/library/gpu-admission:9.9.9"}}
    with tarfile.open(path, "w") as tar:
        for name, data in {"oci-layout": b'{"imageLayoutVersion":"1.0.0"}',
                           "index.json": json.dumps({"schemaVersion": 2, "manifests": [descriptor]}).encode(),
                           **{"blobs/" + d.replace(":", "/"): b for d, b in blobs.items()}}.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


@pytest.fixture
def release(tmp_path):
    """A lock of two packages (each with its amd64 and aarch64 wheel hashes), both wheelhouses."""
    wheels = {}
    for machine in ("x86_64", "aarch64"):
        house = tmp_path / f"wheels-{machine}"
        house.mkdir()
        for name in (f"orjson-3.13.0-cp311-cp311-manylinux_2_17_{machine}.whl", "pyyaml_x-6.0-py3-none-any.whl"):
            (house / name).write_bytes(f"{name} bytes".encode())
        wheels[machine] = house
    hashes: dict[str, list[str]] = {}
    for house in wheels.values():
        for wheel in house.iterdir():
            hashes.setdefault(wheel.name.split("-")[0], []).append(hashlib.sha256(wheel.read_bytes()).hexdigest())
    lock = tmp_path / "requirements.lock"
    lock.write_text("".join(f"{n.replace('_', '-')}=={'3.13.0' if n == 'orjson' else '6.0'} \\\n"
                            + " \\\n".join(f"    --hash=sha256:{h}" for h in sorted(set(hs))) + "\n"
                            for n, hs in hashes.items()))
    dists = {"gpu-admission": "9.9.9", "orjson": "3.13.0", "pyyaml-x": "6.0"}
    return tmp_path, lock, wheels, dists


def test_the_sbom_lists_the_locked_packages_with_the_installed_file_s_hash_and_the_debian_packages(release):
    root, lock, wheels, dists = release
    archive = oci_archive(root / "amd64.tar", "amd64", dists)
    bom = sbom.bom(archive, lock, wheels["x86_64"], epoch=1796297239, version="9.9.9")
    assert (bom["bomFormat"], bom["specVersion"]) == ("CycloneDX", "1.5")
    assert bom["metadata"]["timestamp"] == "2026-12-03T11:27:19Z"
    python = {c["name"]: c for c in bom["components"] if c.get("purl", "").startswith("pkg:pypi/")}
    assert set(python) == {"orjson", "pyyaml-x"}
    wheel = next(wheels["x86_64"].glob("orjson-*"))
    assert python["orjson"]["version"] == "3.13.0" and python["orjson"]["purl"] == "pkg:pypi/orjson@3.13.0"
    assert python["orjson"]["hashes"] == [{"alg": "SHA-256", "content": hashlib.sha256(wheel.read_bytes()).hexdigest()}]
    debian = [c["purl"] for c in bom["components"] if c.get("purl", "").startswith("pkg:deb/")]
    assert debian == ["pkg:deb/debian/base-files@12.4+deb12u13?arch=amd64&distro=debian-12",
                      "pkg:deb/debian/libssl3@3.0.17-1~deb12u3?arch=amd64&distro=debian-12"]  # not the removed one
    assert next(c for c in bom["components"] if c["type"] == "operating-system")["version"] == "12.13"
    assert bom == sbom.bom(archive, lock, wheels["x86_64"], epoch=1796297239, version="9.9.9")  # deterministic


def test_the_arm64_image_s_sbom_names_the_aarch64_files(release):
    root, lock, wheels, dists = release
    archive = oci_archive(root / "arm64.tar", "arm64", dists)
    bom = sbom.bom(archive, lock, wheels["aarch64"], epoch=0, version="9.9.9")
    (orjson,) = [c for c in bom["components"] if c["name"] == "orjson"]
    assert orjson["properties"] == [{"name": "gpu-admission:file",
                                     "value": "orjson-3.13.0-cp311-cp311-manylinux_2_17_aarch64.whl"}]


@pytest.mark.parametrize("change, message", [
    pytest.param({"orjson": "3.12.0"}, "differ from requirements.lock", id="image-installed-another-version"),
    pytest.param({"extra-pkg": "1.0"}, "differ from requirements.lock", id="image-has-an-unlocked-package"),
    pytest.param({"gpu-admission": "9.9.8"}, "the image's gpu-admission is 9.9.8", id="image-of-another-release"),
    pytest.param({"pyyaml-x": None}, "differ from requirements.lock", id="image-lacks-a-locked-package"),
    # what `python3 -m venv` seeds unless told --without-pip: an installer, and setuptools 66 (CVE-2024-6345)
    pytest.param({"setuptools": "66.1.1"}, r"'setuptools': \(None, '66\.1\.1'\)", id="image-has-venv-s-setuptools"),
    pytest.param({"pip": "23.0.1"}, r"'pip': \(None, '23\.0\.1'\)", id="image-has-venv-s-pip"),
])
def test_the_sbom_refuses_an_image_that_is_not_the_lock_s(release, change, message):
    root, lock, wheels, dists = release
    archive = oci_archive(root / "image.tar", "amd64",
                          {n: v for n, v in {**dists, **change}.items() if v is not None})
    with pytest.raises(SystemExit, match=message):
        sbom.bom(archive, lock, wheels["x86_64"], epoch=0, version="9.9.9")


def test_the_sbom_refuses_a_wheel_whose_hash_the_lock_lacks(release):
    root, lock, wheels, dists = release
    next(wheels["x86_64"].glob("orjson-*")).write_bytes(b"another build")
    with pytest.raises(SystemExit, match=r"not one of requirements\.lock's hashes"):
        sbom.bom(oci_archive(root / "image.tar", "amd64", dists), lock, wheels["x86_64"], epoch=0, version="9.9.9")


def test_the_image_index_lists_both_architectures_with_their_digests_unchanged(release, tmp_path):
    root, _, _, dists = release
    amd64 = oci_archive(root / "amd64.tar", "amd64", dists)
    arm64 = oci_archive(root / "arm64.tar", "arm64", dists)
    out = tmp_path / "index.tar"
    digest = image_index.build(out, [amd64, arm64], epoch=7)
    with tarfile.open(out) as tar:
        (top,) = json.loads(tar.extractfile("index.json").read())["manifests"]
        index = tar.extractfile("blobs/" + digest.replace(":", "/")).read()
        assert {m.mtime for m in tar.getmembers()} == {7}
    assert top["digest"] == digest == "sha256:" + hashlib.sha256(index).hexdigest()
    assert top["annotations"]["org.opencontainers.image.ref.name"] == "docker.io/library/gpu-admission:9.9.9"
    single = [json.loads(tarfile.open(a).extractfile("index.json").read())["manifests"][0]["digest"]
              for a in (amd64, arm64)]
    listed = json.loads(index)["manifests"]
    assert [(m["digest"], m["platform"]) for m in listed] == [
        (single[0], {"architecture": "amd64", "os": "linux"}), (single[1], {"architecture": "arm64", "os": "linux"})]
    assert digest == image_index.build(tmp_path / "again.tar", [amd64, arm64], epoch=7)
    assert (tmp_path / "again.tar").read_bytes() == out.read_bytes()
    with pytest.raises(SystemExit, match="one image per architecture"):
        image_index.build(tmp_path / "twice.tar", [amd64, amd64], epoch=7)
