"""The image's software bill of materials, CycloneDX 1.5 JSON: read from the image itself (its OCI archive) and
from the lock it was installed from.

- The Python environment: every package of requirements.lock with its version, its purl and the SHA-256 of the
  file the image installed (the wheelhouse's file for the image's architecture, one of the lock's hashes), after
  checking that the image's virtualenv holds exactly the lock's packages and the project (the Dockerfile makes it
  without pip, so no installer and no setuptools: one there is a package the lock does not have, and fails).
- The Debian packages: every package dpkg lists as installed in the image (/var/lib/dpkg/status of its layers),
  with version, architecture and purl, and the Debian release as the operating system.

Deterministic: the timestamp is the release's SOURCE_DATE_EPOCH and the serial number is derived from the content,
so the same image and lock give the same bytes.
"""
from __future__ import annotations

import datetime as dt
import email.parser
import hashlib
import json
import re
import tarfile
import uuid
from pathlib import Path

from packaging.utils import canonicalize_name, parse_wheel_filename

SITE = re.compile(r"^opt/gpu-admission/lib/python3\.\d+/site-packages/([^/]+)\.dist-info/METADATA$")
WANTED = ("var/lib/dpkg/status", "etc/debian_version", "etc/os-release")


def _blob(layout: tarfile.TarFile, digest: str) -> bytes:
    member = layout.extractfile("blobs/" + digest.replace(":", "/"))
    assert member is not None
    return member.read()


def manifests(archive: Path) -> list[tuple[dict, dict]]:
    """(manifest, config) of each image in the archive: one per architecture."""
    with tarfile.open(archive) as layout:
        index = json.loads(layout.extractfile("index.json").read())  # type: ignore[union-attr]
        out, pending = [], list(index["manifests"])
        while pending:
            descriptor = pending.pop(0)
            body = json.loads(_blob(layout, descriptor["digest"]))
            if "manifests" in body:  # an image index inside
                pending += body["manifests"]
                continue
            out.append(({**body, "_digest": descriptor["digest"]}, json.loads(_blob(layout, body["config"]["digest"]))))
    return out


def image_files(archive: Path, manifest: dict) -> tuple[dict[str, bytes], dict[str, str]]:
    """The files of WANTED as the image's layers leave them, and the Python distributions of its virtualenv
    (name -> version, from their METADATA)."""
    files: dict[str, bytes] = {}
    dists: dict[str, str] = {}
    with tarfile.open(archive) as layout:
        for layer in manifest["layers"]:
            member = layout.extractfile("blobs/" + layer["digest"].replace(":", "/"))
            with tarfile.open(fileobj=member, mode="r|*") as tar:
                for entry in tar:
                    name = entry.name.lstrip("./")
                    if entry.isfile() and name in WANTED:
                        files[name] = tar.extractfile(entry).read()  # type: ignore[union-attr]
                    elif entry.isfile() and SITE.match(name):
                        meta = email.parser.BytesHeaderParser().parsebytes(
                            tar.extractfile(entry).read())  # type: ignore[union-attr]
                        dists[canonicalize_name(meta["Name"])] = meta["Version"]
    return files, dists


def lock_pins(lock: Path) -> dict[str, tuple[str, set[str]]]:
    """name -> (version, the lock's sha256 hashes)."""
    out: dict[str, tuple[str, set[str]]] = {}
    current = None
    for line in lock.read_text(encoding="utf-8").splitlines():
        if pin := re.match(r"^([A-Za-z0-9_.\-]+)==([^ \\]+)", line):
            current = canonicalize_name(pin.group(1))
            out[current] = (pin.group(2), set())
        elif current and (h := re.search(r"--hash=sha256:([0-9a-f]{64})", line)):
            out[current][1].add(h.group(1))
    return out


def _wheel_tags_match(name: str, architecture: str) -> bool:
    machine = {"amd64": "x86_64", "arm64": "aarch64"}[architecture]
    _, _, _, tags = parse_wheel_filename(name)
    return all(t.platform == "any" or machine in t.platform for t in tags)


def installed_files(wheelhouse: Path, architecture: str) -> dict[tuple[str, str], Path]:
    """(name, version) -> the wheel of the wheelhouse that a pip on `architecture` installs."""
    out: dict[tuple[str, str], Path] = {}
    for wheel in sorted(wheelhouse.glob("*.whl")):
        name, version, _, _ = parse_wheel_filename(wheel.name)
        if _wheel_tags_match(wheel.name, architecture):
            out[(canonicalize_name(name), str(version))] = wheel
    return out


def dpkg_packages(status: bytes) -> list[dict[str, str]]:
    out = []
    for stanza in status.decode("utf-8").split("\n\n"):
        fields = email.parser.HeaderParser().parsestr(stanza)
        if fields.get("Package") and fields.get("Status", "").endswith(" installed"):
            out.append({"name": fields["Package"], "version": fields["Version"],
                        "arch": fields.get("Architecture", "all"), "source": fields.get("Source", "")})
    return sorted(out, key=lambda p: p["name"])


def _os_release(text: bytes) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.decode().splitlines() if "=" in line)


def bom(archive: Path, lock: Path, wheelhouse: Path, epoch: int, version: str) -> dict:
    (manifest, config), *others = manifests(archive)
    if others:
        raise SystemExit(f"{archive}: one image per SBOM (the archive holds {len(others) + 1})")
    architecture = config["architecture"]
    files, dists = image_files(archive, manifest)
    pins = lock_pins(lock)
    project = dists.pop("gpu-admission", None)
    if project != version:
        raise SystemExit(f"{archive}: the image's gpu-admission is {project}, the release {version}")
    drift = {n: (pins.get(n, (None,))[0], dists.get(n)) for n in set(pins) | set(dists)
             if pins.get(n, (None,))[0] != dists.get(n)}
    if drift:
        raise SystemExit(f"{archive}: the image's Python packages differ from requirements.lock (lock, image): "
                         f"{dict(sorted(drift.items()))}")
    wheels = installed_files(wheelhouse, architecture)
    components = []
    for name, (pinned, hashes) in sorted(pins.items()):
        wheel = wheels.get((name, pinned))
        if wheel is None:
            raise SystemExit(f"{wheelhouse}: no {architecture} wheel of {name}=={pinned} (make wheelhouse)")
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        if digest not in hashes:
            raise SystemExit(f"{wheel}: its sha256 is not one of requirements.lock's hashes for {name}")
        purl = f"pkg:pypi/{name}@{pinned}"
        components.append({"type": "library", "bom-ref": purl, "name": name, "version": pinned, "purl": purl,
                           "hashes": [{"alg": "SHA-256", "content": digest}],
                           "properties": [{"name": "gpu-admission:file", "value": wheel.name}]})
    release = _os_release(files.get("etc/os-release", b""))
    distro = f"debian-{release.get('VERSION_ID', '').strip(chr(34))}"
    for package in dpkg_packages(files.get("var/lib/dpkg/status", b"")):
        purl = f"pkg:deb/debian/{package['name']}@{package['version']}?arch={package['arch']}&distro={distro}"
        entry = {"type": "library", "bom-ref": purl, "name": package["name"], "version": package["version"],
                 "purl": purl}
        if package["source"]:
            entry["properties"] = [{"name": "debian:source", "value": package["source"]}]
        components.append(entry)
    debian = (files.get("etc/debian_version") or b"").decode().strip()
    components.append({"type": "operating-system", "bom-ref": f"os:debian@{debian}", "name": "debian",
                       "version": debian})
    body = {
        "bomFormat": "CycloneDX", "specVersion": "1.5", "version": 1,
        "metadata": {
            "timestamp": dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "tools": {"components": [{"type": "application", "name": "gpu-admission tools/sbom.py"}]},
            "component": {"type": "container", "bom-ref": f"pkg:oci/gpu-admission@{manifest['_digest']}",
                          "name": "gpu-admission", "version": version,
                          "purl": f"pkg:oci/gpu-admission@{manifest['_digest']}?arch={architecture}",
                          "hashes": [{"alg": "SHA-256", "content": manifest["_digest"].split(":", 1)[1]}]},
        },
        "components": components,
    }
    serial = uuid.uuid5(uuid.NAMESPACE_URL, "gpu-admission-sbom:" + json.dumps(body, sort_keys=True))
    return {"bomFormat": "CycloneDX", "specVersion": "1.5", "serialNumber": f"urn:uuid:{serial}", **body}


def write(path: Path, *, image: Path, lock: Path, wheelhouse: Path, epoch: int, version: str) -> Path:
    path.write_text(json.dumps(bom(image, lock, wheelhouse, epoch, version), indent=2) + "\n", encoding="utf-8")
    return path
